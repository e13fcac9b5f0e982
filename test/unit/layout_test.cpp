// Layout: the default layout's constants, compose/decompose at every field
// limit, check() for every LayoutCheck value, check_fields() for every field,
// the ID range of a millisecond, and non-default layouts.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "layout.hpp"
#include "test_support.hpp"

namespace snowflake {
namespace {

using unit_test::same_fields;
using unit_test::show;
using unit_test::unix_ms_utc;

// The layout is usable at compile time.
static_assert(Layout{}.max_timestamp() == (int64_t{1} << 41) - 1, "default timestamp width");
static_assert(Layout{}.max_id(Layout{}.max_timestamp()) == INT64_MAX, "largest ID");
static_assert(Layout::check(41, 5, 5, 12) == LayoutCheck::kOk, "default layout checks");

// A layout under test, with its widths spelled out so that expected values
// can be computed with plain shifts rather than with Layout itself.
struct Widths {
  int timestamp_bits;
  int datacenter_bits;
  int worker_bits;
  int sequence_bits;
};

Layout layout_of(const Widths& w, int64_t epoch_ms = kDefaultEpochMs) {
  return Layout(w.timestamp_bits, w.datacenter_bits, w.worker_bits, w.sequence_bits, epoch_ms);
}

int64_t ones(int bits) {
  return bits == 0 ? 0 : static_cast<int64_t>(~uint64_t{0} >> (64 - bits));
}

int64_t shifted_id(const Widths& w, const Fields& f) {
  const uint64_t id =
      static_cast<uint64_t>(f.timestamp) << (w.datacenter_bits + w.worker_bits + w.sequence_bits) |
      static_cast<uint64_t>(f.datacenter_id) << (w.worker_bits + w.sequence_bits) |
      static_cast<uint64_t>(f.worker_id) << w.sequence_bits | static_cast<uint64_t>(f.sequence);
  return static_cast<int64_t>(id);
}

const Widths kDefaultWidths{41, 5, 5, 12};
const std::vector<Widths> kLayoutsUnderTest = {
    kDefaultWidths, {41, 0, 10, 12}, {39, 5, 7, 12}, {42, 4, 4, 13}};

std::string describe(const Widths& w) {
  return std::to_string(w.timestamp_bits) + "/" + std::to_string(w.datacenter_bits) + "/" +
         std::to_string(w.worker_bits) + "/" + std::to_string(w.sequence_bits);
}

TEST(LayoutDefaults, WidthsAndEpochAreTwitters) {
  const Layout layout;
  EXPECT_EQ(layout.timestamp_bits(), 41);
  EXPECT_EQ(layout.datacenter_bits(), 5);
  EXPECT_EQ(layout.worker_bits(), 5);
  EXPECT_EQ(layout.sequence_bits(), 12);
  EXPECT_EQ(layout.node_bits(), 10);
  EXPECT_EQ(layout.epoch_ms(), 1288834974657);
  EXPECT_EQ(kDefaultEpochMs, 1288834974657);
  EXPECT_EQ(layout.total_bits(), 63);
  EXPECT_EQ(layout.unit_ms(), 1);
  EXPECT_EQ(Layout::check(layout.timestamp_bits(), layout.datacenter_bits(), layout.worker_bits(),
                          layout.sequence_bits()),
            LayoutCheck::kOk);
}

TEST(LayoutDefaults, EpochIsTwitters2010Epoch) {
  EXPECT_EQ(kDefaultEpochMs, unix_ms_utc(2010, 11, 4, 1, 42, 54, 657))
      << "expected 2010-11-04 01:42:54.657 UTC";
}

TEST(LayoutDefaults, FieldMaximums) {
  const Layout layout;
  EXPECT_EQ(layout.max_timestamp(), 2199023255551);  // 2^41 - 1
  EXPECT_EQ(layout.max_timestamp(), (int64_t{1} << 41) - 1);
  EXPECT_EQ(layout.max_datacenter_id(), 31);
  EXPECT_EQ(layout.max_worker_id(), 31);
  EXPECT_EQ(layout.max_node(), 1023);
  EXPECT_EQ(layout.max_sequence(), 4095);
}

TEST(LayoutDefaults, LastRepresentableMillisecondFallsInJuly2080) {
  const Layout layout;
  EXPECT_EQ(layout.last_unix_ms(), 1288834974657 + 2199023255551);
  EXPECT_EQ(layout.last_unix_ms(), unix_ms_utc(2080, 7, 10, 17, 30, 30, 208))
      << "expected 2080-07-10 17:30:30.208 UTC";
  EXPECT_GE(layout.last_unix_ms(), unix_ms_utc(2080, 7, 1));
  EXPECT_LT(layout.last_unix_ms(), unix_ms_utc(2080, 8, 1));
}

TEST(LayoutDefaults, SmallestIdIsZero) {
  const Layout layout;
  EXPECT_EQ(layout.compose(Fields{0, 0, 0, 0}), 0);
  EXPECT_EQ(layout.compose(0, 0, 0), 0);
  const Fields f = layout.decompose(0);
  EXPECT_TRUE(same_fields(f, Fields{0, 0, 0, 0})) << "decompose(0) = " << show(f);
  EXPECT_EQ(layout.min_id(0), 0);
}

TEST(LayoutDefaults, LargestIdIsInt64Max) {
  const Layout layout;
  const Fields largest{layout.max_timestamp(), 31, 31, 4095};
  EXPECT_EQ(layout.compose(largest), INT64_MAX);
  EXPECT_EQ(layout.compose(layout.max_timestamp(), layout.max_node(), layout.max_sequence()),
            INT64_MAX);
  const Fields f = layout.decompose(INT64_MAX);
  EXPECT_TRUE(same_fields(f, largest)) << "decompose(INT64_MAX) = " << show(f);
  EXPECT_EQ(layout.max_id(layout.max_timestamp()), INT64_MAX);
}

TEST(LayoutDefaults, EachFieldAloneLandsInItsBits) {
  const Layout layout;
  EXPECT_EQ(layout.compose(Fields{1, 0, 0, 0}), int64_t{1} << 22);
  EXPECT_EQ(layout.compose(Fields{0, 1, 0, 0}), int64_t{1} << 17);
  EXPECT_EQ(layout.compose(Fields{0, 0, 1, 0}), int64_t{1} << 12);
  EXPECT_EQ(layout.compose(Fields{0, 0, 0, 1}), 1);
  EXPECT_EQ(layout.compose(Fields{layout.max_timestamp(), 0, 0, 0}), int64_t{0x7FFFFFFFFFC00000});
  EXPECT_EQ(layout.compose(Fields{0, 31, 0, 0}), int64_t{0x3E0000});
  EXPECT_EQ(layout.compose(Fields{0, 0, 31, 0}), int64_t{0x1F000});
  EXPECT_EQ(layout.compose(Fields{0, 0, 0, 4095}), int64_t{0xFFF});
}

TEST(LayoutDefaults, NodeCombinesDatacenterAndWorker) {
  const Layout layout;
  EXPECT_EQ(layout.node(0, 0), 0);
  EXPECT_EQ(layout.node(0, 31), 31);
  EXPECT_EQ(layout.node(1, 0), 32);
  EXPECT_EQ(layout.node(31, 31), 1023);
  EXPECT_EQ(layout.node(3, 7), 3 * 32 + 7);
  const int64_t id = layout.compose(Fields{12345, 3, 7, 99});
  EXPECT_EQ(id, layout.compose(12345, layout.node(3, 7), 99));
  EXPECT_EQ(layout.timestamp_of(id), 12345);
  EXPECT_EQ(layout.node_of(id), 3 * 32 + 7);
  EXPECT_EQ(layout.sequence_of(id), 99);
}

// Every field at 0, 1, max - 1 and max, in every combination, for each layout:
// compose agrees with plain shifts, the ID is never negative, and decompose
// gives the fields back.
TEST(LayoutEdges, ComposeAndDecomposeAtEveryFieldLimit) {
  for (const Widths& w : kLayoutsUnderTest) {
    SCOPED_TRACE("layout " + describe(w));
    const Layout layout = layout_of(w);
    ASSERT_EQ(Layout::check(w.timestamp_bits, w.datacenter_bits, w.worker_bits, w.sequence_bits),
              LayoutCheck::kOk);
    ASSERT_EQ(layout.max_timestamp(), ones(w.timestamp_bits));
    ASSERT_EQ(layout.max_datacenter_id(), ones(w.datacenter_bits));
    ASSERT_EQ(layout.max_worker_id(), ones(w.worker_bits));
    ASSERT_EQ(layout.max_node(), ones(w.datacenter_bits + w.worker_bits));
    ASSERT_EQ(layout.max_sequence(), ones(w.sequence_bits));

    auto limits = [](int64_t max) {
      std::vector<int64_t> values{0, 1, max - 1, max};
      std::vector<int64_t> in_range;
      for (int64_t v : values)
        if (v >= 0 && v <= max) in_range.push_back(v);
      return in_range;
    };
    int checked = 0;
    for (int64_t ts : limits(layout.max_timestamp()))
      for (int64_t dc : limits(layout.max_datacenter_id()))
        for (int64_t worker : limits(layout.max_worker_id()))
          for (int64_t seq : limits(layout.max_sequence())) {
            const Fields fields{ts, dc, worker, seq};
            ASSERT_EQ(layout.check_fields(fields), FieldCheck::kOk) << show(fields);
            const int64_t id = layout.compose(fields);
            EXPECT_EQ(id, shifted_id(w, fields)) << "compose(" << show(fields) << ")";
            EXPECT_GE(id, 0) << "compose(" << show(fields) << ")";
            const Fields back = layout.decompose(id);
            EXPECT_TRUE(same_fields(back, fields))
                << "decompose(" << id << ") = " << show(back) << ", composed from " << show(fields);
            EXPECT_EQ(layout.timestamp_of(id), ts) << "id " << id;
            EXPECT_EQ(layout.node_of(id), layout.node(dc, worker)) << "id " << id;
            EXPECT_EQ(layout.sequence_of(id), seq) << "id " << id;
            ++checked;
          }
    EXPECT_GE(checked, 2 * 4 * 4 * 4) << "too few combinations were checked";
  }
}

TEST(LayoutEdges, LargestIdOfEveryLayoutIsInt64Max) {
  for (const Widths& w : kLayoutsUnderTest) {
    SCOPED_TRACE("layout " + describe(w));
    const Layout layout = layout_of(w);
    EXPECT_EQ(layout.max_id(layout.max_timestamp()), INT64_MAX);
    EXPECT_EQ(layout.compose(Fields{layout.max_timestamp(), layout.max_datacenter_id(),
                                    layout.max_worker_id(), layout.max_sequence()}),
              INT64_MAX);
    EXPECT_EQ(layout.min_id(0), 0);
  }
}

TEST(LayoutEdges, MinAndMaxIdOfAMillisecond) {
  for (const Widths& w : kLayoutsUnderTest) {
    SCOPED_TRACE("layout " + describe(w));
    const Layout layout = layout_of(w);
    const int shift = w.datacenter_bits + w.worker_bits + w.sequence_bits;
    for (int64_t ts : {int64_t{0}, int64_t{1}, int64_t{1000},
                       int64_t{367597485448 % (layout.max_timestamp() + 1)},
                       layout.max_timestamp() - 1, layout.max_timestamp()}) {
      const int64_t lo = layout.min_id(ts);
      const int64_t hi = layout.max_id(ts);
      EXPECT_EQ(lo, ts << shift) << "min_id(" << ts << ")";
      EXPECT_EQ(hi, lo + ones(shift)) << "max_id(" << ts << ")";
      EXPECT_EQ(layout.timestamp_of(lo), ts);
      EXPECT_EQ(layout.timestamp_of(hi), ts);
      EXPECT_EQ(layout.node_of(lo), 0);
      EXPECT_EQ(layout.sequence_of(lo), 0);
      EXPECT_EQ(layout.node_of(hi), layout.max_node());
      EXPECT_EQ(layout.sequence_of(hi), layout.max_sequence());
      if (ts > 0) {
        EXPECT_EQ(layout.max_id(ts - 1) + 1, lo) << "millisecond " << ts << " does not follow on";
      }
      // Every node's IDs of the millisecond lie in [min_id, max_id].
      for (int64_t node : {int64_t{0}, layout.max_node() / 2, layout.max_node()}) {
        EXPECT_GE(layout.compose(ts, node, 0), lo);
        EXPECT_LE(layout.compose(ts, node, layout.max_sequence()), hi);
      }
    }
  }
}

TEST(LayoutNonDefault, FlatNodeField41_0_10_12) {
  const Layout layout(41, 0, 10, 12, kDefaultEpochMs);
  EXPECT_EQ(layout.node_bits(), 10);
  EXPECT_EQ(layout.max_datacenter_id(), 0);
  EXPECT_EQ(layout.max_worker_id(), 1023);
  EXPECT_EQ(layout.max_node(), 1023);
  EXPECT_EQ(layout.node(0, 1023), 1023);
  const int64_t id = layout.compose(Fields{5, 0, 1023, 4095});
  EXPECT_EQ(id, (int64_t{5} << 22) | (int64_t{1023} << 12) | 4095);
  const Fields f = layout.decompose(id);
  EXPECT_TRUE(same_fields(f, Fields{5, 0, 1023, 4095})) << show(f);
  // A flat node field decodes with datacenter_id 0 whatever the ID.
  EXPECT_EQ(layout.decompose(INT64_MAX).datacenter_id, 0);
  EXPECT_EQ(layout.decompose(INT64_MAX).worker_id, 1023);
}

TEST(LayoutNonDefault, NarrowTimestamp39_5_7_12) {
  const Layout layout(39, 5, 7, 12, 0);
  EXPECT_EQ(layout.max_timestamp(), 549755813887);  // 2^39 - 1
  EXPECT_EQ(layout.max_worker_id(), 127);
  EXPECT_EQ(layout.max_node(), 4095);
  EXPECT_EQ(layout.node(31, 127), 4095);
  EXPECT_EQ(layout.last_unix_ms(), 549755813887);
  const int64_t id = layout.compose(Fields{1, 2, 3, 4});
  EXPECT_EQ(id, (int64_t{1} << 24) | (int64_t{2} << 19) | (int64_t{3} << 12) | 4);
  const Fields f = layout.decompose(id);
  EXPECT_TRUE(same_fields(f, Fields{1, 2, 3, 4})) << show(f);
}

TEST(LayoutNonDefault, WideTimestamp42_4_4_13) {
  const int64_t epoch = unix_ms_utc(2020, 1, 1);
  const Layout layout(42, 4, 4, 13, epoch);
  EXPECT_EQ(layout.epoch_ms(), epoch);
  EXPECT_EQ(layout.max_timestamp(), 4398046511103);  // 2^42 - 1
  EXPECT_EQ(layout.max_datacenter_id(), 15);
  EXPECT_EQ(layout.max_worker_id(), 15);
  EXPECT_EQ(layout.max_sequence(), 8191);
  EXPECT_EQ(layout.last_unix_ms(), epoch + 4398046511103);
  const int64_t id = layout.compose(Fields{1, 15, 15, 8191});
  EXPECT_EQ(id, (int64_t{1} << 21) | (int64_t{15} << 17) | (int64_t{15} << 13) | 8191);
  EXPECT_EQ(id, layout.max_id(1));
}

struct CheckCase {
  int timestamp_bits;
  int datacenter_bits;
  int worker_bits;
  int sequence_bits;
  LayoutCheck expected;
};

TEST(LayoutCheckTest, EveryResult) {
  const std::vector<CheckCase> cases = {
      {41, 5, 5, 12, LayoutCheck::kOk},
      {41, 0, 10, 12, LayoutCheck::kOk},  // datacenter_bits 0 is allowed
      {39, 5, 7, 12, LayoutCheck::kOk},
      {42, 4, 4, 13, LayoutCheck::kOk},
      {1, 0, 1, 31, LayoutCheck::kOk},                  // every width at its lower limit but one
      {1, 0, 1, 32, LayoutCheck::kSequenceOutOfRange},  // decode's column is an integer
      {61, 0, 1, 1, LayoutCheck::kOk},
      {3, 30, 29, 1, LayoutCheck::kOk},       // datacenter_bits at its upper limit
      {2, 0, 30, 31, LayoutCheck::kOk},       // worker_bits at its upper limit
      {41, 5, 5, 11, LayoutCheck::kOk},       // 62 bits: IDs below 2^62
      {41, 5, 5, 13, LayoutCheck::kOk},       // 64: the sign bit is time
      {1, 0, 1, 1, LayoutCheck::kOk},         // 3
      {38, 0, 5, 10, LayoutCheck::kOk},       // 53
      {48, 0, 0, 16, LayoutCheck::kOk},       // no node field at all
      {42, 5, 5, 13, LayoutCheck::kTooWide},  // 65
      {62, 0, 0, 3, LayoutCheck::kTooWide},
      {62, 0, 0, 1, LayoutCheck::kOk},
      {63, 0, 0, 1, LayoutCheck::kTimestampOutOfRange},  // 2^63 ms is past int64
      {kMaxTimestampBits + 1, 0, 0, 1, LayoutCheck::kTimestampOutOfRange},
      {kMaxTimestampBits, 0, 0, 1, LayoutCheck::kOk},
      {0, 5, 5, 53, LayoutCheck::kTimestampOutOfRange},
      {-1, 5, 5, 54, LayoutCheck::kTimestampOutOfRange},
      {INT_MIN, 5, 5, 12, LayoutCheck::kTimestampOutOfRange},
      {42, -1, 10, 12, LayoutCheck::kDatacenterOutOfRange},
      {1, 31, 19, 12, LayoutCheck::kDatacenterOutOfRange},
      {41, INT_MAX, 5, 12, LayoutCheck::kDatacenterOutOfRange},
      {52, 0, -1, 12, LayoutCheck::kWorkerOutOfRange},
      {20, 0, 31, 12, LayoutCheck::kWorkerOutOfRange},
      {48, 5, 10, 0, LayoutCheck::kSequenceOutOfRange},
      {49, 5, 10, -1, LayoutCheck::kSequenceOutOfRange},
      {41, 5, 5, INT_MIN, LayoutCheck::kSequenceOutOfRange},
  };
  for (const CheckCase& c : cases) {
    EXPECT_EQ(Layout::check(c.timestamp_bits, c.datacenter_bits, c.worker_bits, c.sequence_bits),
              c.expected)
        << "check(" << c.timestamp_bits << ", " << c.datacenter_bits << ", " << c.worker_bits
        << ", " << c.sequence_bits << ")";
  }
}

// check() validates widths that may come from configuration, so any int must
// give an answer; summing the widths in int overflows for huge ones.
TEST(LayoutCheckTest, HugeWidthsAreRejectedWithoutOverflow) {
  volatile int huge = INT_MAX;  // not a constant: the check runs at run time
  EXPECT_EQ(Layout::check(huge, 0, 1, 1), LayoutCheck::kTimestampOutOfRange)
      << "check(INT_MAX, 0, 1, 1)";
  EXPECT_EQ(Layout::check(1, 0, 1, huge), LayoutCheck::kSequenceOutOfRange)
      << "check(1, 0, 1, INT_MAX)";
  EXPECT_EQ(Layout::check(huge, 30, 30, huge), LayoutCheck::kTimestampOutOfRange)
      << "check(INT_MAX, 30, 30, INT_MAX)";
}

// The unit, the epoch and the order are checked too, and the last time of the
// field must be a number of ms since 1970 that int64 holds.
TEST(LayoutCheckTest, UnitEpochOrderAndTimeSpan) {
  LayoutParts parts;
  EXPECT_EQ(Layout::check(parts), LayoutCheck::kOk);
  for (int64_t unit : {int64_t{0}, int64_t{-10}, int64_t{1001}, INT64_MAX}) {
    parts.unit_ms = unit;
    EXPECT_EQ(Layout::check(parts), LayoutCheck::kUnitOutOfRange) << "unit " << unit;
  }
  parts.unit_ms = 1000;
  EXPECT_EQ(Layout::check(parts), LayoutCheck::kOk);
  parts.epoch_ms = -1;
  EXPECT_EQ(Layout::check(parts), LayoutCheck::kEpochOutOfRange);
  parts.epoch_ms = INT64_MAX;
  EXPECT_EQ(Layout::check(parts), LayoutCheck::kTimeTooLong);
  // With 1 s units, 54 bits of time reach 2^54 s: past 2^63 ms.
  parts = LayoutParts{54, 0, 0, 1};
  parts.unit_ms = 1000;
  EXPECT_EQ(Layout::check(parts), LayoutCheck::kTimeTooLong);
  parts.timestamp_bits = 53;
  EXPECT_EQ(Layout::check(parts), LayoutCheck::kOk);
  parts = LayoutParts{};
  parts.order = FieldOrder{Field::kWorker, Field::kWorker, Field::kSequence};
  EXPECT_EQ(Layout::check(parts), LayoutCheck::kOrderInvalid);
}

TEST(LayoutCheckFields, InRangeAtEveryLimit) {
  const Layout layout;
  EXPECT_EQ(layout.check_fields(Fields{0, 0, 0, 0}), FieldCheck::kOk);
  EXPECT_EQ(layout.check_fields(Fields{layout.max_timestamp(), 31, 31, 4095}), FieldCheck::kOk);
}

struct FieldCase {
  Fields fields;
  FieldCheck expected;
};

TEST(LayoutCheckFields, NamesEachOutOfRangeField) {
  const Layout layout;
  const int64_t max_ts = layout.max_timestamp();
  const std::vector<FieldCase> cases = {
      {{-1, 0, 0, 0}, FieldCheck::kTimestamp},
      {{max_ts + 1, 0, 0, 0}, FieldCheck::kTimestamp},
      {{INT64_MIN, 0, 0, 0}, FieldCheck::kTimestamp},
      {{INT64_MAX, 0, 0, 0}, FieldCheck::kTimestamp},
      {{0, -1, 0, 0}, FieldCheck::kDatacenter},
      {{0, 32, 0, 0}, FieldCheck::kDatacenter},
      {{0, 0, -1, 0}, FieldCheck::kWorker},
      {{0, 0, 32, 0}, FieldCheck::kWorker},
      {{0, 0, 0, -1}, FieldCheck::kSequence},
      {{0, 0, 0, 4096}, FieldCheck::kSequence},
      {{max_ts, 31, 31, 4096}, FieldCheck::kSequence},
      // Several fields out of range: the first in ID order is named.
      {{-1, 32, 32, 4096}, FieldCheck::kTimestamp},
      {{0, 32, 32, 4096}, FieldCheck::kDatacenter},
      {{0, 0, 32, 4096}, FieldCheck::kWorker},
  };
  for (const FieldCase& c : cases) {
    EXPECT_EQ(layout.check_fields(c.fields), c.expected)
        << "check_fields(" << show(c.fields) << ")";
  }
}

TEST(LayoutCheckFields, FollowsTheLayoutsWidths) {
  const Layout flat(41, 0, 10, 12, kDefaultEpochMs);
  EXPECT_EQ(flat.check_fields(Fields{0, 0, 1023, 0}), FieldCheck::kOk);
  EXPECT_EQ(flat.check_fields(Fields{0, 1, 0, 0}), FieldCheck::kDatacenter);
  EXPECT_EQ(flat.check_fields(Fields{0, 0, 1024, 0}), FieldCheck::kWorker);

  const Layout wide(42, 4, 4, 13, kDefaultEpochMs);
  EXPECT_EQ(wide.check_fields(Fields{wide.max_timestamp(), 15, 15, 8191}), FieldCheck::kOk);
  EXPECT_EQ(wide.check_fields(Fields{wide.max_timestamp() + 1, 0, 0, 0}), FieldCheck::kTimestamp);
  EXPECT_EQ(wide.check_fields(Fields{0, 16, 0, 0}), FieldCheck::kDatacenter);
  EXPECT_EQ(wide.check_fields(Fields{0, 0, 16, 0}), FieldCheck::kWorker);
  EXPECT_EQ(wide.check_fields(Fields{0, 0, 0, 8192}), FieldCheck::kSequence);

  const Layout narrow(39, 5, 7, 12, kDefaultEpochMs);
  EXPECT_EQ(narrow.check_fields(Fields{(int64_t{1} << 39) - 1, 31, 127, 4095}), FieldCheck::kOk);
  EXPECT_EQ(narrow.check_fields(Fields{int64_t{1} << 39, 0, 0, 0}), FieldCheck::kTimestamp);
  EXPECT_EQ(narrow.check_fields(Fields{0, 0, 128, 0}), FieldCheck::kWorker);
}

}  // namespace
}  // namespace snowflake
