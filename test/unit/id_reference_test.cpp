// Layout against an independent reference: a decoder for the default layout
// written with the plain shifts and masks of Twitter's IdWorker, fixed known
// vectors, and property tests over a million random field tuples per layout.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "layout.hpp"
#include "test_support.hpp"

namespace snowflake {
namespace {

using unit_test::same_fields;
using unit_test::show;
using unit_test::unix_ms_utc;

// The reference: the default layout's constants written out by hand.
constexpr int64_t kTwitterEpochMs = 1288834974657;

struct Decoded {
  int64_t unix_ms;
  int64_t datacenter_id;
  int64_t worker_id;
  int64_t sequence;
};

Decoded reference_decode(int64_t id) {
  const uint64_t bits = static_cast<uint64_t>(id);
  return Decoded{static_cast<int64_t>(bits >> 22) + kTwitterEpochMs,
                 static_cast<int64_t>((bits >> 17) & 0x1F),
                 static_cast<int64_t>((bits >> 12) & 0x1F), static_cast<int64_t>(bits & 0xFFF)};
}

int64_t reference_encode(int64_t unix_ms, int64_t datacenter_id, int64_t worker_id,
                         int64_t sequence) {
  return static_cast<int64_t>(static_cast<uint64_t>(unix_ms - kTwitterEpochMs) << 22 |
                              static_cast<uint64_t>(datacenter_id) << 17 |
                              static_cast<uint64_t>(worker_id) << 12 |
                              static_cast<uint64_t>(sequence));
}

std::string show(const Decoded& d) {
  return "{unix_ms=" + std::to_string(d.unix_ms) +
         " datacenter_id=" + std::to_string(d.datacenter_id) +
         " worker_id=" + std::to_string(d.worker_id) + " sequence=" + std::to_string(d.sequence) +
         "}";
}

// Layout's view of an ID, converted to the reference's terms.
Decoded layout_decode(const Layout& layout, int64_t id) {
  const Fields f = layout.decompose(id);
  return Decoded{f.timestamp + layout.epoch_ms(), f.datacenter_id, f.worker_id, f.sequence};
}

bool same(const Decoded& a, const Decoded& b) {
  return a.unix_ms == b.unix_ms && a.datacenter_id == b.datacenter_id &&
         a.worker_id == b.worker_id && a.sequence == b.sequence;
}

struct KnownId {
  int64_t id;
  Decoded decoded;
};

// Decoded by hand: timestamp = id >> 22, + epoch; datacenter = (id >> 17) & 31;
// worker = (id >> 12) & 31; sequence = id & 4095.
const std::vector<KnownId> kKnownIds = {
    {0, {1288834974657, 0, 0, 0}},
    {1, {1288834974657, 0, 0, 1}},
    {4095, {1288834974657, 0, 0, 4095}},
    {4096, {1288834974657, 0, 1, 0}},
    {131072, {1288834974657, 1, 0, 0}},
    {4194303, {1288834974657, 31, 31, 4095}},
    {4194304, {1288834974658, 0, 0, 0}},
    {1212092628029698048, {1577820376771, 10, 7, 0}},
    {1541815603606036480, {1656432460105, 11, 26, 0}},
    {INT64_MAX, {3487858230208, 31, 31, 4095}},
};

TEST(ReferenceDecoder, KnownTwitterEraId) {
  const int64_t id = 1541815603606036480;
  EXPECT_EQ(id >> 22, 367597485448);
  EXPECT_EQ((id >> 22) + kTwitterEpochMs, 1656432460105);
  EXPECT_EQ(1656432460105, unix_ms_utc(2022, 6, 28, 16, 7, 40, 105))
      << "expected 2022-06-28 16:07:40.105 UTC";
  const Layout layout;
  EXPECT_EQ(layout.timestamp_of(id) + layout.epoch_ms(), 1656432460105);
  EXPECT_EQ(layout.decompose(id).datacenter_id, 11);
  EXPECT_EQ(layout.decompose(id).worker_id, 26);
  EXPECT_EQ(layout.decompose(id).sequence, 0);
}

TEST(ReferenceDecoder, AgreesWithLayoutOnKnownVectors) {
  const Layout layout;
  for (const KnownId& known : kKnownIds) {
    EXPECT_TRUE(same(reference_decode(known.id), known.decoded))
        << "reference_decode(" << known.id << ") = " << show(reference_decode(known.id))
        << ", expected " << show(known.decoded);
    EXPECT_TRUE(same(layout_decode(layout, known.id), known.decoded))
        << "Layout::decompose(" << known.id << ") = " << show(layout_decode(layout, known.id))
        << ", expected " << show(known.decoded);
    const Decoded& d = known.decoded;
    EXPECT_EQ(reference_encode(d.unix_ms, d.datacenter_id, d.worker_id, d.sequence), known.id);
    EXPECT_EQ(layout.compose(
                  Fields{d.unix_ms - layout.epoch_ms(), d.datacenter_id, d.worker_id, d.sequence}),
              known.id)
        << "Layout::compose(" << show(d) << ")";
  }
}

// Stops a property test after this many reported failures.
constexpr int kMaxReportedFailures = 10;
constexpr int kRandomCases = 1'000'000;

TEST(ReferenceDecoder, AgreesWithLayoutOnRandomIds) {
  const Layout layout;
  std::mt19937_64 rng(20101104);
  int failures = 0;
  for (int i = 0; i < kRandomCases && failures < kMaxReportedFailures; ++i) {
    const int64_t id = static_cast<int64_t>(rng() >> 1);
    const Decoded expected = reference_decode(id);
    const Decoded actual = layout_decode(layout, id);
    if (!same(expected, actual)) {
      ++failures;
      ADD_FAILURE() << "id " << id << ": Layout gives " << show(actual) << ", reference gives "
                    << show(expected);
    }
  }
}

struct LayoutUnderTest {
  const char* name;
  Layout layout;
};

const std::vector<LayoutUnderTest> kPropertyLayouts = {
    {"41/5/5/12 (default)", Layout()},
    {"41/0/10/12", Layout(41, 0, 10, 12, kDefaultEpochMs)},
    {"42/4/4/13", Layout(42, 4, 4, 13, unix_ms_utc(2020, 1, 1))},
    {"39/5/7/12", Layout(39, 5, 7, 12, 0)},
};

int64_t uniform(std::mt19937_64& rng, int64_t max) {
  return static_cast<int64_t>(rng() & static_cast<uint64_t>(max));  // max is 2^k - 1
}

// Random in-range fields -> compose -> decompose gives them back, the ID is
// never negative, and for the default layout the reference agrees.
TEST(LayoutProperty, ComposeThenDecomposeRoundTrips) {
  for (const LayoutUnderTest& t : kPropertyLayouts) {
    SCOPED_TRACE(t.name);
    const Layout& layout = t.layout;
    const bool is_default = layout.timestamp_bits() == 41 && layout.datacenter_bits() == 5 &&
                            layout.epoch_ms() == kTwitterEpochMs;
    std::mt19937_64 rng(42);
    int failures = 0;
    for (int i = 0; i < kRandomCases && failures < kMaxReportedFailures; ++i) {
      const Fields fields{
          uniform(rng, layout.max_timestamp()), uniform(rng, layout.max_datacenter_id()),
          uniform(rng, layout.max_worker_id()), uniform(rng, layout.max_sequence())};
      const int64_t id = layout.compose(fields);
      const Fields back = layout.decompose(id);
      if (id < 0 || !same_fields(back, fields)) {
        ++failures;
        ADD_FAILURE() << "compose(" << show(fields) << ") = " << id << ", decompose gives "
                      << show(back);
        continue;
      }
      if (is_default) {
        const int64_t reference =
            reference_encode(fields.timestamp + kTwitterEpochMs, fields.datacenter_id,
                             fields.worker_id, fields.sequence);
        if (reference != id) {
          ++failures;
          ADD_FAILURE() << "compose(" << show(fields) << ") = " << id << ", reference gives "
                        << reference;
        }
      }
    }
  }
}

// Random non-negative IDs -> decompose -> fields in range -> compose gives the
// ID back: every bit of an ID belongs to exactly one field.
TEST(LayoutProperty, DecomposeThenComposeRoundTrips) {
  for (const LayoutUnderTest& t : kPropertyLayouts) {
    SCOPED_TRACE(t.name);
    const Layout& layout = t.layout;
    std::mt19937_64 rng(7);
    int failures = 0;
    for (int i = 0; i < kRandomCases && failures < kMaxReportedFailures; ++i) {
      const int64_t id = static_cast<int64_t>(rng() >> 1);
      const Fields fields = layout.decompose(id);
      const FieldCheck in_range = layout.check_fields(fields);
      const int64_t back = layout.compose(fields);
      if (in_range != FieldCheck::kOk || back != id) {
        ++failures;
        ADD_FAILURE() << "decompose(" << id << ") = " << show(fields) << " (check_fields "
                      << show(in_range) << "), compose gives " << back;
      }
    }
  }
}

}  // namespace
}  // namespace snowflake
