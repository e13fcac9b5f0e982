// libFuzzer target: the layout arithmetic (src/core/layout.hpp) and the
// generator's (src/core/generator.*) on a random layout and random values.
//
// The input makes a layout (widths, field order, unit, epoch: mostly valid
// ones, 64-bit and coarse-unit ones included, sometimes any integers, which
// check() must judge without overflowing) and then values: IDs to decode,
// fields to compose, times and bounds to convert, and a run of the generator
// driven by a clock that jumps anywhere. Every answer is checked against the
// property it promises, computed with 128-bit integers where the layout's
// 64 could overflow; UBSan and ASan watch the arithmetic itself.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>

#include "fuzz_check.hpp"
#include "generator_run.hpp"
#include "layout.hpp"

namespace {

using snowflake::Field;
using snowflake::Layout;
using snowflake::LayoutCheck;
using snowflake::LayoutParts;
using i128 = __int128;
using u64 = uint64_t;

snowflake::FieldOrder order_of(int permutation) {
  constexpr Field kD = Field::kDatacenter, kW = Field::kWorker, kS = Field::kSequence;
  constexpr snowflake::FieldOrder kOrders[] = {{kD, kW, kS}, {kD, kS, kW}, {kW, kD, kS},
                                               {kW, kS, kD}, {kS, kD, kW}, {kS, kW, kD}};
  return kOrders[permutation];
}

LayoutParts make_parts(FuzzedDataProvider& in) {
  LayoutParts parts;
  parts.order = order_of(in.ConsumeIntegralInRange<int>(0, 5));
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) {  // anything: check() must judge it
    parts.timestamp_bits = in.ConsumeIntegral<int>();
    parts.datacenter_bits = in.ConsumeIntegral<int>();
    parts.worker_bits = in.ConsumeIntegral<int>();
    parts.sequence_bits = in.ConsumeIntegral<int>();
    parts.unit_ms = in.ConsumeIntegral<int64_t>();
    parts.epoch_ms = in.ConsumeIntegral<int64_t>();
    return parts;
  }
  parts.sequence_bits = in.ConsumeIntegralInRange<int>(1, 31);
  parts.datacenter_bits = in.ConsumeIntegralInRange<int>(0, 30);
  parts.worker_bits = in.ConsumeIntegralInRange<int>(0, 30);
  const int below = parts.sequence_bits + parts.datacenter_bits + parts.worker_bits;
  const int most = 64 - below < 63 ? 64 - below : 63;
  // Often the widest timestamp that fits: 64-bit layouts.
  parts.timestamp_bits =
      most < 1 ? 1 : (in.ConsumeBool() ? most : in.ConsumeIntegralInRange<int>(1, most));
  constexpr int64_t kUnits[] = {1, 1, 2, 10, 250, 1000};
  parts.unit_ms = in.ConsumeBool() ? kUnits[in.ConsumeIntegralInRange<int>(0, 5)]
                                   : in.ConsumeIntegralInRange<int64_t>(1, 1000);
  parts.epoch_ms = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(0, int64_t{1} << 42)
                                    : in.ConsumeIntegralInRange<int64_t>(0, INT64_MAX);
  return parts;
}

// A value in [low, high], often one of the ends or next to them.
int64_t edgy(FuzzedDataProvider& in, int64_t low, int64_t high) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0:
      return low;
    case 1:
      return high;
    case 2:
      return low < high ? low + 1 : low;
    case 3:
      return low < high ? high - 1 : high;
    default:
      return in.ConsumeIntegralInRange<int64_t>(low, high);
  }
}

void check_id(const Layout& layout, int64_t id) {
  const int bits = layout.total_bits();
  const bool fits = bits == 64 || (static_cast<u64>(id) >> bits) == 0;
  FUZZ_CHECK(layout.holds(id) == fits);
  if (!fits) return;
  const snowflake::Fields f = layout.decompose(id);
  FUZZ_CHECK(layout.check_fields(f) == snowflake::FieldCheck::kOk);
  FUZZ_CHECK(layout.compose(f) == id);
  FUZZ_CHECK(layout.node_of(id) == layout.node(f.datacenter_id, f.worker_id));
  FUZZ_CHECK(layout.node_of(id) <= layout.max_node());
  const u64 uid = static_cast<u64>(id);
  FUZZ_CHECK(static_cast<u64>(layout.min_id(f.timestamp)) <= uid);
  FUZZ_CHECK(uid <= static_cast<u64>(layout.max_id(f.timestamp)));
  // Issued IDs (timestamps up to max_issued_timestamp) are the positive ones.
  FUZZ_CHECK((id >= 0) == (f.timestamp <= layout.max_issued_timestamp()));
}

void check_fields(const Layout& layout, FuzzedDataProvider& in) {
  snowflake::Fields f;
  f.timestamp = edgy(in, 0, layout.max_timestamp());
  f.datacenter_id = edgy(in, 0, layout.max_datacenter_id());
  f.worker_id = edgy(in, 0, layout.max_worker_id());
  f.sequence = edgy(in, 0, layout.max_sequence());
  const int64_t id = layout.compose(f);
  FUZZ_CHECK(layout.holds(id));
  const snowflake::Fields back = layout.decompose(id);
  FUZZ_CHECK(back.timestamp == f.timestamp && back.datacenter_id == f.datacenter_id &&
             back.worker_id == f.worker_id && back.sequence == f.sequence);
  // The reference: each field at the sum of the widths below it.
  const int seq_shift = __builtin_ctzll(static_cast<u64>(layout.sequence_step()));
  FUZZ_CHECK(((static_cast<u64>(id) >> seq_shift) & static_cast<u64>(layout.max_sequence())) ==
             static_cast<u64>(f.sequence));
  FUZZ_CHECK(static_cast<u64>(id) >> layout.timestamp_shift() == static_cast<u64>(f.timestamp));
  // Out of range by one: check_fields names the field.
  snowflake::Fields bad = f;
  bad.sequence = layout.max_sequence() + 1;
  FUZZ_CHECK(layout.check_fields(bad) == snowflake::FieldCheck::kSequence);
  bad = f;
  bad.timestamp = -1;
  FUZZ_CHECK(layout.check_fields(bad) == snowflake::FieldCheck::kTimestamp);
  // Monotonic in the timestamp, whatever the other fields.
  if (f.timestamp < layout.max_timestamp()) {
    const int64_t t = f.timestamp;
    FUZZ_CHECK(static_cast<u64>(layout.max_id(t)) + 1 == static_cast<u64>(layout.min_id(t + 1)));
    FUZZ_CHECK(static_cast<u64>(id) < static_cast<u64>(layout.min_id(t + 1)));
  }
}

void check_masks(const Layout& layout) {
  const u64 sequence = static_cast<u64>(layout.max_sequence())
                       << __builtin_ctzll(static_cast<u64>(layout.sequence_step()));
  const u64 above = layout.bits_above_sequence();
  const u64 below = layout.bits_below_sequence();
  const u64 time = layout.timestamp_shift() == 64 ? 0 : ~u64{0} << layout.timestamp_shift();
  FUZZ_CHECK((sequence & above) == 0 && (sequence & below) == 0 && (above & below) == 0);
  FUZZ_CHECK(((sequence | above | below) & time) == 0);
  FUZZ_CHECK((sequence | above | below | time) == ~u64{0});
  const u64 node_bits = layout.node_bits_in_id(layout.max_node());
  FUZZ_CHECK(node_bits == (above | below));
  FUZZ_CHECK(__builtin_popcountll(node_bits) == layout.node_bits());
}

void check_time(const Layout& layout, FuzzedDataProvider& in) {
  const int64_t unit = layout.unit_ms();
  const int64_t last = layout.start_ms(layout.max_timestamp());
  // Conversions of ms since the epoch, before it too.
  const int64_t ms = edgy(in, -(int64_t{1} << 62), last);
  const int64_t at = layout.timestamp_at(ms);
  FUZZ_CHECK(i128{at} * unit <= ms && ms < (i128{at} + 1) * unit);
  const int64_t from = layout.timestamp_from(ms);
  FUZZ_CHECK(from == (i128{at} * unit == ms ? at : at + 1));
  // And of ms since 1970, up to the last the layout can hold.
  const int64_t unix_ms = edgy(in, 0, layout.last_unix_ms());
  FUZZ_CHECK(layout.timestamp_at_unix_ms(unix_ms) ==
             layout.timestamp_at(unix_ms - layout.epoch_ms()));
  const int64_t t = edgy(in, 0, layout.max_timestamp());
  FUZZ_CHECK(i128{layout.unix_ms(t)} == i128{layout.epoch_ms()} + i128{t} * unit);
  FUZZ_CHECK(layout.timestamp_at_unix_ms(layout.unix_ms(t)) == t);
  FUZZ_CHECK(layout.timestamp_from_unix_ms(layout.unix_ms(t)) == t);
  // The unit after the last still has a time in int64 (check: kTimeTooLong).
  FUZZ_CHECK(i128{layout.last_unix_ms()} + unit <= INT64_MAX);
  FUZZ_CHECK(layout.last_issued_unix_ms() <= layout.last_unix_ms());
}

void check_bounds(const Layout& layout, FuzzedDataProvider& in) {
  const int64_t issued = layout.max_issued_timestamp();
  FUZZ_CHECK(issued >= 0 && issued <= layout.max_timestamp());
  FUZZ_CHECK(layout.max_id(issued) >= 0);
  if (issued < layout.max_timestamp()) FUZZ_CHECK(layout.min_id(issued + 1) < 0);
  const int shift = layout.timestamp_shift();
  const int64_t until = edgy(in, 0, issued + 1);
  FUZZ_CHECK(layout.id_bound(until) == static_cast<u64>(until) << shift);
  FUZZ_CHECK(layout.timestamp_bound(layout.id_bound(until)) == until);
  // Any bound on IDs: the first unit whose IDs all lie at or above it.
  const u64 id_bound = in.ConsumeBool()
                           ? in.ConsumeIntegral<u64>()
                           : layout.id_bound(until) + in.ConsumeIntegralInRange<int>(-2, 2);
  const int64_t back = layout.timestamp_bound(id_bound);
  const i128 end = i128{issued} + 1;
  FUZZ_CHECK(back >= 0 && back <= end);
  if (back < end) FUZZ_CHECK((static_cast<unsigned __int128>(back) << shift) >= id_bound);
  if (back > 0) FUZZ_CHECK((static_cast<unsigned __int128>(back - 1) << shift) < id_bound);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const LayoutParts parts = make_parts(in);
  if (Layout::check(parts) != LayoutCheck::kOk) return 0;
  const Layout layout(parts);
  FUZZ_CHECK(layout.total_bits() <= 64 && layout.total_bits() >= 2);
  check_masks(layout);
  int rounds = in.ConsumeIntegralInRange<int>(1, 8);
  while (rounds-- > 0 && in.remaining_bytes() > 0) {
    check_id(layout, in.ConsumeIntegral<int64_t>());
    check_id(layout, layout.min_id(edgy(in, 0, layout.max_timestamp())));
    check_fields(layout, in);
    check_time(layout, in);
    check_bounds(layout, in);
  }
  run_generator(layout, in);
  return 0;
}
