// The lease decisions (src/core/lease.hpp): what a backend may issue and
// return under the View, what a claim or renewal reports, and what a claim's
// answer sets. Three tests are the regressions of holes the simulator's brief
// named (issue 29): IDs reserved before a reclaim's floor, a renewal after a
// clock step back, and (registry_row_test.cpp) a late release.
#include <gtest/gtest.h>

#include <cstdint>

#include "layout.hpp"
#include "lease.hpp"

namespace snowflake {
namespace {

using lease::Grant;
using lease::Verdict;

Grant held(int64_t node, int64_t valid_until_us, int64_t ids_before, int64_t floor) {
  Grant grant;
  grant.held = true;
  grant.node = node;
  grant.valid_until_us = valid_until_us;
  grant.ids_before = ids_before;
  grant.floor = floor;
  return grant;
}

TEST(Lease, IssuesOnlyUnderAHeldLeaseBeforeValidUntil) {
  const Grant grant = held(7, 1000, 500, 0);
  EXPECT_EQ(lease::may_issue(grant, 999, 7), Verdict::kAllowed);
  EXPECT_EQ(lease::may_issue(grant, 999, -1), Verdict::kAllowed);
  EXPECT_EQ(lease::may_issue(grant, 1000, 7), Verdict::kExpired);
  EXPECT_EQ(lease::may_issue(grant, 999, 8), Verdict::kOtherNode);
  Grant none = grant;
  none.held = false;
  EXPECT_EQ(lease::may_issue(none, 0, 7), Verdict::kNotHeld);
}

TEST(Lease, ReturnsOnlyBelowTheCap) {
  const Grant grant = held(7, 1000, 500, 0);
  EXPECT_EQ(lease::may_return(grant, 10, 7, 499), Verdict::kAllowed);
  EXPECT_EQ(lease::may_return(grant, 10, 7, 500), Verdict::kAtCap);
  EXPECT_EQ(lease::may_return(grant, 1000, 7, 10), Verdict::kExpired);
}

// A backend checks the lease (registered_node), is paused longer than a
// lease, and reserves; meanwhile the lease lapsed, another node took the
// identity over, and this node took it back, inheriting the other's
// ids_before as its floor. The reservation read last_id before the floor rose,
// so its IDs lie below it, where the other node may have issued the same IDs.
// The View it confirms against is valid again and its cap is higher: only
// the floor tells. Before issue 29, confirm_registered_node returned them.
TEST(Lease, RefusesIdsReservedBelowAReclaimsFloor) {
  const Grant reclaimed = held(7, 5000, 900, 600);
  EXPECT_EQ(lease::may_return(reclaimed, 10, 7, 599), Verdict::kBelowFloor);
  EXPECT_EQ(lease::may_return(reclaimed, 10, 7, 600), Verdict::kAllowed);
  EXPECT_EQ(lease::may_return(held(7, 5000, 900, 0), 10, 7, 1), Verdict::kAllowed);
}

TEST(Lease, ReportsTheWindowAfterTheLaterOfClockAndLastId) {
  EXPECT_EQ(lease::window_ms(10000, 500), 10501);
  EXPECT_EQ(lease::ids_before_to_report(1000, 400, 10000, 500, 0), 11501);
  EXPECT_EQ(lease::ids_before_to_report(1000, 3000, 10000, 500, 0), 13501);
}

// The clock steps back between two renewals: the second would report less
// than the first, lowering the row's ids_before below IDs a backend may still
// return under the first (it confirms against the View until the worker
// publishes the second). The report never goes below the cap. Before
// issue 29 it did.
TEST(Lease, RenewalAfterAClockStepBackNeverLowersIdsBefore) {
  const int64_t first = lease::ids_before_to_report(100000, 99000, 10000, 0, 0);
  const int64_t second = lease::ids_before_to_report(40000, 39000, 10000, 0, first);
  EXPECT_GE(second, first);
}

TEST(Lease, ValidUntilRenewAndRetry) {
  EXPECT_EQ(lease::valid_until_us(1000, 30000000), 1000 + 27000000);
  EXPECT_EQ(lease::renew_at_us(1000, 30000000), 1000 + 10000000);
  EXPECT_EQ(lease::retry_at_us(1000, 30000000), 1000 + 1000000);
  EXPECT_EQ(lease::retry_at_us(1000, 300000), 1000 + 100000);
}

TEST(Lease, FloorCapAndReleaseInTheLayoutsUnits) {
  const Layout layout;  // 1 ms units
  const int64_t epoch = layout.epoch_ms();
  EXPECT_EQ(lease::floor_from_inherited(layout, -1), 0);
  EXPECT_EQ(lease::floor_from_inherited(layout, epoch), 0);
  EXPECT_EQ(lease::floor_from_inherited(layout, epoch + 42), 42);
  EXPECT_EQ(lease::cap_from_ids_before(layout, epoch + 42), 42);
  EXPECT_EQ(lease::cap_ms(layout, 42), epoch + 42);
  EXPECT_EQ(lease::cap_ms(layout, 0), 0);
  const int64_t id = layout.compose(41, 3, 5);
  EXPECT_EQ(lease::release_ids_before_ms(layout, id), epoch + 42);
  // A 10 ms unit: the first unit at or after the limit.
  LayoutParts parts;
  parts.unit_ms = 10;
  const Layout coarse(parts);
  EXPECT_EQ(lease::floor_from_inherited(coarse, coarse.epoch_ms() + 41), 5);
  EXPECT_EQ(lease::floor_from_inherited(coarse, coarse.epoch_ms() + 40), 4);
}

// The round's accepted claim (registry_round.cpp): the floor outlives only a
// renewal, and never goes below what the claim inherited.
TEST(Lease, OnlyARenewalKeepsTheFloor) {
  EXPECT_EQ(lease::floor_after_claim(500, true, 0), 500);
  EXPECT_EQ(lease::floor_after_claim(500, true, 300), 500);
  EXPECT_EQ(lease::floor_after_claim(500, true, 700), 700);
  // A new claim, another identity, or a takeover: the old floor goes.
  EXPECT_EQ(lease::floor_after_claim(500, false, 0), 0);
  EXPECT_EQ(lease::floor_after_claim(500, false, 300), 300);
}

}  // namespace
}  // namespace snowflake
