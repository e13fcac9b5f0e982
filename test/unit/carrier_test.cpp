// The dump's carrier of the bound (src/core/carrier.hpp): what a backend does
// when its IDs reach the carrier it last saw, and what a restored row gives
// the node. The glue (src/pg/bound/carrier.cpp) and the simulator call these.
#include <gtest/gtest.h>

#include <cstdint>

#include "carrier.hpp"
#include "layout.hpp"

namespace snowflake {
namespace {

using carrier::Admission;

TEST(Carrier, TheValueOfABoundLiesAboveEveryIdBelowIt) {
  const Layout layout;
  EXPECT_EQ(carrier::of_bound(layout, 0), 0);
  EXPECT_EQ(carrier::of_bound(layout, 1000), layout.min_id(1000));
  EXPECT_GT(carrier::of_bound(layout, 1000), layout.max_id(999));
  // The bound of a carried value keeps the next ID at or above it.
  EXPECT_EQ(carrier::bound_of(layout, layout.min_id(1000)), 1000);
  EXPECT_EQ(carrier::bound_of(layout, layout.min_id(1000) + 1), 1001);
  EXPECT_EQ(carrier::bound_of(layout, 0), 0);
  // Past the last unit: a positive bigint still.
  EXPECT_EQ(carrier::of_bound(layout, layout.max_issued_timestamp() + 5), INT64_MAX);
}

TEST(Carrier, AnotherLayoutReadsTheSameValueAsABoundToo) {
  // Sonyflake's 10 ms units and 39-bit time: the value, a number, keeps its
  // next ID above every ID under it, whatever the layout that wrote it.
  LayoutParts parts;
  parts.timestamp_bits = 39;
  parts.datacenter_bits = 0;
  parts.worker_bits = 16;
  parts.sequence_bits = 8;
  parts.unit_ms = 10;
  const Layout sonyflake(parts);
  const Layout twitter;
  const int64_t carried = carrier::of_bound(twitter, 123456789);
  const int64_t until = carrier::bound_of(sonyflake, carried);
  EXPECT_GE(sonyflake.min_id(until), carried);
  EXPECT_LT(sonyflake.min_id(until - 1), carried);
}

TEST(Carrier, ABackendRaisesTheCarrierToTheWrittenBound) {
  const Layout layout;
  const carrier::AfterRead after =
      carrier::after_read(layout, 5000, carrier::of_bound(layout, 4000), 0, layout.min_id(4500));
  EXPECT_FALSE(after.adopt);
  EXPECT_FALSE(after.reserve_again);
  EXPECT_EQ(after.raise_to, carrier::of_bound(layout, 5000));
  EXPECT_EQ(after.covered_below, carrier::of_bound(layout, 5000));
  // No carrier at all (1.7, or no row): covered up to the written bound.
  const carrier::AfterRead none = carrier::after_read(layout, 5000, 0, 0, layout.min_id(4500));
  EXPECT_FALSE(none.adopt);
  EXPECT_EQ(none.covered_below, carrier::of_bound(layout, 5000));
}

TEST(Carrier, AnotherClustersCarrierAboveTheNodesBoundIsTakenAndTheRunReservedAgain) {
  const Layout layout;
  const int64_t carried = layout.max_id(9000) + 1;
  const carrier::AfterRead after =
      carrier::after_read(layout, 5000, carried, carried, layout.min_id(4500));
  EXPECT_TRUE(after.adopt);
  EXPECT_EQ(after.adopt_until, 9001);
  EXPECT_TRUE(after.reserve_again);
  EXPECT_GE(after.raise_to, carried);
  EXPECT_GE(after.covered_below, carried);
  // A run already above it is kept.
  EXPECT_FALSE(
      carrier::after_read(layout, 5000, carried, carried, layout.min_id(9001)).reserve_again);
}

TEST(Carrier, ThisClustersOwnCarrierAboveItsExactBoundIsNotTakenAgain) {
  // After a clean shutdown the state file holds the exact bound (4600), below
  // the durable bound (5600) the carrier was raised to: the first IDs after
  // the restart are not held back to it, and lie below the row.
  const Layout layout;
  const int64_t carried = carrier::of_bound(layout, 5600);
  const carrier::AfterRead after =
      carrier::after_read(layout, 4600, carried, 0, layout.min_id(4601));
  EXPECT_FALSE(after.adopt);
  EXPECT_FALSE(after.reserve_again);
  EXPECT_EQ(after.covered_below, carried);
  // Another cluster's row below it changes nothing either.
  EXPECT_FALSE(
      carrier::after_read(layout, 4600, carried, carrier::of_bound(layout, 4000), 0).adopt);
}

TEST(Carrier, ARestoredRowAtOrBelowTheNodesBoundGivesNothing) {
  const Layout layout;
  EXPECT_EQ(carrier::admit(layout, carrier::of_bound(layout, 5000), 5000, false, 0, 0),
            Admission::kCovered);
  EXPECT_EQ(carrier::admit(layout, 0, 5000, true, 0, 0), Admission::kCovered);
}

TEST(Carrier, ARoleThatMayGiveBoundsGivesAnyRestoredRow) {
  const Layout layout;
  // An hour ahead of the clock (3,600,000 ms), max_lead 0.
  const int64_t ahead = layout.min_id(3600000 + 1000);
  EXPECT_EQ(carrier::admit(layout, ahead, 500, true, 1000, 0), Admission::kTaken);
}

TEST(Carrier, AnotherRoleGivesARestoredRowOnlyWithinMaxLeadOfTheClock) {
  const Layout layout;
  const int64_t clock = 1000000;
  // IDs up to the clock's unit: what the node itself may have issued by now.
  EXPECT_EQ(carrier::admit(layout, layout.max_id(clock) + 1, 500, false, clock, 0),
            Admission::kTaken);
  // One unit further: refused with max_lead 0, taken with max_lead 1 ms.
  EXPECT_EQ(carrier::admit(layout, layout.max_id(clock + 1) + 1, 500, false, clock, 0),
            Admission::kRefused);
  EXPECT_EQ(carrier::admit(layout, layout.max_id(clock + 1) + 1, 500, false, clock, 1),
            Admission::kTaken);
  // An hour ahead with max_lead 30 min: refused; with 2 h: taken.
  const int64_t hour = layout.min_id(clock + 3600000);
  EXPECT_EQ(carrier::admit(layout, hour, 500, false, clock, 1800000), Admission::kRefused);
  EXPECT_EQ(carrier::admit(layout, hour, 500, false, clock, 7200000), Admission::kTaken);
}

}  // namespace
}  // namespace snowflake
