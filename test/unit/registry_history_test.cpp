// The registry's history as a node sees it (src/core/registry_history.hpp):
// what counts as a change, the floor after one, whom it binds (a claim that
// is not a renewal; a holder's gap, src/core/lease.hpp), and the row the claim
// statement reports (src/core/registry_row.hpp). The sequences of issue 44
// item 3 (a registry table dropped and made again, a holder renewing a row
// whose takeover the registry forgot) are spelled out at the end.
#include <gtest/gtest.h>

#include <cstdint>

#include "lease.hpp"
#include "registry_history.hpp"
#include "registry_row.hpp"

namespace snowflake {
namespace {

using registry_history::Identity;
using registry_history::Memory;
using registry_history::RowBefore;

constexpr int64_t kLeaseMs = 30000;

TEST(RegistryHistory, AnyKnownPartThatDiffersIsAChange) {
  const Identity before{7001, 1, 16385};
  EXPECT_EQ(registry_history::compare(before, before), 0u);
  EXPECT_EQ(registry_history::compare(before, Identity{7002, 1, 16385}),
            unsigned{registry_history::kSystemChanged});
  EXPECT_EQ(registry_history::compare(before, Identity{7001, 2, 16385}),
            unsigned{registry_history::kTimelineChanged});
  // The database or the table dropped and made again, a dump restored.
  EXPECT_EQ(registry_history::compare(before, Identity{7001, 1, 16400}),
            unsigned{registry_history::kTableChanged});
  // Moved to another server: another system, and perhaps the same OID.
  EXPECT_EQ(registry_history::compare(before, Identity{7002, 1, 16385}),
            unsigned{registry_history::kSystemChanged});
  EXPECT_EQ(registry_history::compare(before, Identity{7002, 3, 16390}),
            registry_history::kSystemChanged | registry_history::kTimelineChanged |
                registry_history::kTableChanged);
}

TEST(RegistryHistory, UnknownPartsAreNotCompared) {
  // A role that may not execute pg_control_system(), and a node that never
  // reached the registry: nothing to compare.
  EXPECT_EQ(registry_history::compare(Identity{7001, 1, 16385}, Identity{0, 0, 16385}), 0u);
  EXPECT_EQ(registry_history::compare(Identity{}, Identity{7001, 1, 16385}), 0u);
  EXPECT_EQ(registry_history::compare(Identity{0, 0, 16385}, Identity{7001, 1, 16400}),
            unsigned{registry_history::kTableChanged});
}

TEST(RegistryHistory, RemembersTheKnownPartsSeen) {
  const Identity merged = registry_history::merge(Identity{7001, 1, 16385}, Identity{0, 2, 16400});
  EXPECT_EQ(merged, (Identity{7001, 2, 16400}));
  EXPECT_EQ(registry_history::merge(Identity{}, Identity{7001, 1, 16385}),
            (Identity{7001, 1, 16385}));
}

TEST(RegistryHistory, ARowGoneOrOlderThanSeenIsAChange) {
  // Never saw the row: its absence or its age says nothing.
  EXPECT_EQ(registry_history::row_change(0, RowBefore{false, 0}), 0u);
  EXPECT_EQ(registry_history::row_change(0, RowBefore{true, 5}), 0u);
  // Saw it renewed at 1000: gone, older, the same, newer (a renewal whose
  // reply was lost, another node's takeover).
  EXPECT_EQ(registry_history::row_change(1000, RowBefore{false, 0}),
            unsigned{registry_history::kRowGone});
  EXPECT_EQ(registry_history::row_change(1000, RowBefore{true, 999}),
            unsigned{registry_history::kRowOlder});
  EXPECT_EQ(registry_history::row_change(1000, RowBefore{true, 1000}), 0u);
  EXPECT_EQ(registry_history::row_change(1000, RowBefore{true, 1001}), 0u);
}

TEST(RegistryHistory, TheFloorIsALeaseAndMaxLeadAfterTheRegistrysNow) {
  // The longest lease seen, at least this node's own, at most an hour.
  EXPECT_EQ(registry_history::floor_after_change(1000000, 0, kLeaseMs, 0), 1000000 + kLeaseMs + 1);
  EXPECT_EQ(registry_history::floor_after_change(1000000, 60000, kLeaseMs, 50),
            1000000 + 60000 + 50 + 1);
  EXPECT_EQ(registry_history::floor_after_change(1000000, 10 * 3600000, kLeaseMs, 0),
            1000000 + registry_history::kLongestLeaseMs + 1);
}

TEST(RegistryHistory, TheFloorOnlyRises) {
  Memory memory;
  registry_history::seen_lease(&memory, 60000);
  registry_history::seen_change(&memory, 1000000, kLeaseMs, 0);
  EXPECT_EQ(memory.changed_at_ms, 1000000);
  EXPECT_EQ(memory.floor_ms, 1000000 + 60000 + 1);
  // A second change seen on a clock behind the first (another server's).
  registry_history::seen_change(&memory, 900000, kLeaseMs, 0);
  EXPECT_EQ(memory.changed_at_ms, 900000);
  EXPECT_EQ(memory.floor_ms, 1000000 + 60000 + 1);
  registry_history::seen_change(&memory, 2000000, kLeaseMs, 0);
  EXPECT_EQ(memory.floor_ms, 2000000 + 60000 + 1);
}

TEST(RegistryHistory, AnEmptyTableKeepsTheLongestLeaseSeenBefore) {
  Memory memory;
  registry_history::seen_lease(&memory, 120000);
  registry_history::seen_lease(&memory, 0);  // the table made again, empty
  EXPECT_EQ(memory.longest_lease_ms, 120000);
  registry_history::seen_lease(&memory, 30000);  // shorter leases since
  EXPECT_EQ(memory.longest_lease_ms, 30000);
  registry_history::seen_lease(&memory, 100 * 3600000LL);
  EXPECT_EQ(memory.longest_lease_ms, registry_history::kLongestLeaseMs);
}

TEST(RegistryHistory, AClaimThatIsNotARenewalStartsAtTheFloor) {
  Memory memory;
  EXPECT_EQ(registry_history::claim_floor_ms(memory, -1, false), -1);
  EXPECT_EQ(registry_history::claim_floor_ms(memory, 5000, false), 5000);
  registry_history::seen_change(&memory, 1000000, kLeaseMs, 0);
  EXPECT_EQ(registry_history::claim_floor_ms(memory, -1, false), 1000000 + kLeaseMs + 1);
  EXPECT_EQ(registry_history::claim_floor_ms(memory, 2000000, false), 2000000);
  // A renewal keeps what it had (its gap covers it: lease.hpp).
  EXPECT_EQ(registry_history::claim_floor_ms(memory, -1, true), -1);
  EXPECT_EQ(registry_history::claim_floor_ms(memory, 5000, true), 5000);
}

lease::Grant held(int64_t ids_before) {
  lease::Grant grant;
  grant.held = true;
  grant.node = 7;
  grant.valid_until_us = 1000000000;
  grant.ids_before = ids_before;
  return grant;
}

TEST(LeaseGap, AHolderThatSeesAChangeKeepsItsIdsBelowItsCapAndAboveTheFloor) {
  lease::Grant grant = held(500);
  lease::gap_after_change(&grant, 800, 300);
  EXPECT_EQ(grant.gap_from, 500);
  EXPECT_EQ(grant.gap_until, 800);
  // A renewal raised the cap since.
  grant.ids_before = 2000;
  EXPECT_EQ(lease::may_return(grant, 0, 7, 499), lease::Verdict::kAllowed);
  EXPECT_EQ(lease::may_return(grant, 0, 7, 500), lease::Verdict::kInGap);
  EXPECT_EQ(lease::may_return(grant, 0, 7, 799), lease::Verdict::kInGap);
  EXPECT_EQ(lease::may_return(grant, 0, 7, 800), lease::Verdict::kAllowed);
}

TEST(LeaseGap, NoGapWithoutALeaseOrWhenTheFloorIsBelowTheCap) {
  lease::Grant none;
  lease::gap_after_change(&none, 800, 0);
  EXPECT_EQ(none.gap_until, 0);
  lease::Grant grant = held(900);
  lease::gap_after_change(&grant, 800, 300);
  EXPECT_EQ(grant.gap_until, 0);
  EXPECT_EQ(lease::may_return(grant, 0, 7, 850), lease::Verdict::kAllowed);
}

TEST(LeaseGap, APendingGapWidensAPassedOneIsReplaced) {
  lease::Grant grant = held(500);
  lease::gap_after_change(&grant, 800, 300);
  grant.ids_before = 700;
  // Seen again before the generator passed the first gap: both covered.
  lease::gap_after_change(&grant, 1200, 450);
  EXPECT_EQ(grant.gap_from, 500);
  EXPECT_EQ(grant.gap_until, 1200);
  // Once past it (raise_floor(1200) leaves the last ID in unit 1199), a new
  // change starts a gap at the cap of the moment.
  grant.ids_before = 1500;
  lease::gap_after_change(&grant, 1900, 1199);
  EXPECT_EQ(grant.gap_from, 1500);
  EXPECT_EQ(grant.gap_until, 1900);
}

TEST(LeaseGap, TheGeneratorCrossesTheGapBeforeItsIdsReachIt) {
  lease::Grant grant = held(2000);
  grant.gap_from = 500;
  grant.gap_until = 800;
  // Far below it: no.
  EXPECT_FALSE(lease::must_cross_gap(grant, 100, 400));
  // The clock plus max_lead reaches it, or the next unit is in it: yes.
  EXPECT_TRUE(lease::must_cross_gap(grant, 100, 500));
  EXPECT_TRUE(lease::must_cross_gap(grant, 499, 300));
  // Already at its end (raised there): no more.
  EXPECT_FALSE(lease::must_cross_gap(grant, 799, 900));
  lease::Grant none = held(2000);
  EXPECT_FALSE(lease::must_cross_gap(none, 100, 100000));
}

TEST(LeaseGap, AClaimThatIsNotARenewalLeavesNoGap) {
  lease::Grant grant = held(500);
  lease::gap_after_change(&grant, 800, 300);
  lease::gap_after_claim(&grant, true);
  EXPECT_EQ(grant.gap_until, 800);
  lease::gap_after_claim(&grant, false);
  EXPECT_EQ(grant.gap_from, 0);
  EXPECT_EQ(grant.gap_until, 0);
}

// The claim statement reports the row as it was (registry_row::claim).
TEST(RegistryHistory, TheClaimReportsTheRowBeforeIt) {
  registry_row::Row row;
  const registry_row::Holder a{"7001", 1, "a:5432", "/d", 11};
  registry_row::ClaimRequest request{a, kLeaseMs, 2000000, kLeaseMs + 1};
  registry_row::ClaimAnswer answer = registry_row::claim(row, request, 1000000000);
  EXPECT_FALSE(answer.existed);
  answer = registry_row::claim(row, request, 1010000000);
  EXPECT_TRUE(answer.existed);
  EXPECT_EQ(answer.previous_renewed_at_us, 1000000000);
  const registry_row::Holder c{"7001", 2, "c:5432", "/e", 12};
  request.self = c;
  answer = registry_row::claim(row, request, 1011000000);
  EXPECT_FALSE(answer.claimed);
  EXPECT_TRUE(answer.existed);
  EXPECT_EQ(answer.previous_renewed_at_us, 1010000000);
}

// Issue 44, item 3: production A holds the identity, a restored copy C of
// it (a later timeline) is refused; the registry's database is dropped and
// made again. Before, C claimed the free row of the empty table with no floor
// while A still issued under its lease. Both remember the old table.
TEST(RegistryHistory, ATableMadeAgainGivesTheRestoredCopyTheFloor) {
  const Identity old_table{7001, 1, 16385}, new_table{7001, 1, 16410};
  Memory c;
  c.identity = old_table;
  registry_history::seen_lease(&c, kLeaseMs);
  const int64_t now_ms = 1800000000000;
  ASSERT_NE(registry_history::compare(c.identity, new_table), 0u);
  registry_history::seen_change(&c, now_ms, kLeaseMs, 0);
  c.identity = registry_history::merge(c.identity, new_table);
  // C's claim inserts the row: no inherited ids_before; it starts at the floor,
  // above every ID A may issue under the lease the registry forgot (A's cap is
  // at most its last renewal, before now, plus the lease and max_lead).
  const int64_t a_cap_ms = now_ms - 1 + kLeaseMs;
  EXPECT_GT(registry_history::claim_floor_ms(c, -1, false), a_cap_ms);
  // C restarted after it saw the change: the remembered identity is the new
  // one, and the floor was remembered with it.
  EXPECT_EQ(registry_history::compare(c.identity, new_table), 0u);
  EXPECT_GT(registry_history::claim_floor_ms(c, -1, false), a_cap_ms);
}

// The case 1.7 left open: holder A renews a row whose takeover the registry
// forgot. D took the identity over above A's cap (500) and issues there; the
// registry fails over to a standby without D's claim, and A, which sees the
// new timeline, renews its own row (the same holder) with a higher cap. Its
// IDs from its old cap on must then lie above the floor, above D's.
TEST(RegistryHistory, AHolderRenewingARowWhoseTakeoverWasForgottenSkipsTheGap) {
  lease::Grant a = held(500);
  const int64_t d_floor = 500;      // D inherited A's ids_before
  const int64_t d_last = 500 + 40;  // D's IDs, on clocks in step, below the floor
  const int64_t floor = 600;        // the change's floor as a timestamp
  ASSERT_GT(floor, d_last);
  lease::gap_after_change(&a, floor, 450);
  a.ids_before = 1500;  // A's renewal on the new registry
  for (int64_t t = d_floor; t <= d_last; t++)
    EXPECT_NE(lease::may_return(a, 0, 7, t), lease::Verdict::kAllowed) << t;
  EXPECT_EQ(lease::may_return(a, 0, 7, 499), lease::Verdict::kAllowed);
  EXPECT_EQ(lease::may_return(a, 0, 7, floor), lease::Verdict::kAllowed);
}

}  // namespace
}  // namespace snowflake
