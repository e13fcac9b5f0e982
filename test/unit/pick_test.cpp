// Automatic leasing's pick (src/core/pick.hpp): this node's row first, a live
// one before an expired one; else the lowest identity no live row holds; else
// none. The registry worker calls it on its SELECT's rows, the simulator on
// its registry's.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "layout.hpp"
#include "pick.hpp"

namespace snowflake {
namespace {

using automatic::HolderText;
using automatic::Pick;
using automatic::Range;
using automatic::Row;

// This node: system 7001, timeline 2, on pg-a:5432 in /data, its postmaster's token 11.
const HolderText kSelf{"7001", 2, "pg-a:5432", "/data", 11};
const HolderText kOther{"7002", 1, "pg-b:5432", "/data", 12};

Row row(int datacenter_id, int worker_id, const HolderText& holder, bool live,
        bool released = false, bool stale = false) {
  Row result;
  result.datacenter_id = datacenter_id;
  result.worker_id = worker_id;
  result.holder = holder;
  result.live = live;
  result.released = released;
  result.stale = stale;
  return result;
}

Range range(int first_datacenter_id, int last_datacenter_id, int last_worker_id) {
  Range result;
  result.first_datacenter_id = first_datacenter_id;
  result.last_datacenter_id = last_datacenter_id;
  result.last_worker_id = last_worker_id;
  return result;
}

Pick pick(const Range& in, std::vector<Row> rows, const HolderText& self = kSelf) {
  return automatic::pick(in, self, rows.data(), rows.size());
}

void expect_identity(const Pick& got, int datacenter_id, int worker_id) {
  EXPECT_TRUE(got.found);
  EXPECT_EQ(got.datacenter_id, datacenter_id);
  EXPECT_EQ(got.worker_id, worker_id);
}

TEST(Pick, AnEmptyRegistryGivesTheLowestIdentity) {
  expect_identity(pick(range(0, 31, 31), {}), 0, 0);
  expect_identity(pick(range(3, 3, 31), {}), 3, 0);
}

TEST(Pick, SkipsLiveRowsAndReservedOnesToTheFirstGap) {
  // (0, 0) and (0, 1) held by others, (0, 2) reserved by an administrator
  // (a live row of a system that never renews), (0, 4) held: (0, 3) is free.
  const HolderText reserved{"0", 0, "legacy-db:5432", "/var/lib/postgresql/15/main"};
  expect_identity(pick(range(0, 0, 31), {row(0, 0, kOther, true), row(0, 1, kOther, true),
                                         row(0, 2, reserved, true), row(0, 4, kOther, true)}),
                  0, 3);
}

TEST(Pick, ExpiredRowsOfOtherNodesCountAsFree) {
  expect_identity(pick(range(0, 0, 31), {row(0, 0, kOther, true), row(0, 1, kOther, false),
                                         row(0, 2, kOther, true)}),
                  0, 1);
}

TEST(Pick, MyLiveRowComesFirst) {
  // (0, 0) is free, but this node holds (0, 5): a restart within the lease.
  expect_identity(pick(range(0, 0, 31), {row(0, 5, kSelf, true), row(0, 6, kOther, true)}), 0, 5);
}

TEST(Pick, MyLiveRowBeforeMyEarlierExpiredOne) {
  expect_identity(pick(range(0, 0, 31), {row(0, 2, kSelf, false), row(0, 9, kSelf, true)}), 0, 9);
}

TEST(Pick, MyExpiredRowWhenNoneOfMineIsLive) {
  // Lower identities are free, but the node takes its own row back (no one
  // took it since its lease expired).
  expect_identity(pick(range(0, 0, 31), {row(0, 7, kSelf, false), row(0, 8, kSelf, false)}), 0, 7);
}

TEST(Pick, AnEarlierTimelineOfMySystemIsMineOnceItsHolderStopped) {
  // A promoted standby (or a restore) finds its primary's row elsewhere: it
  // is this node's to take once the primary released it (a switchover),
  // stopped renewing it (stale: a failover) or its lease expired; the claim
  // that follows is a takeover above the floor.
  const HolderText primary{"7001", 1, "pg-primary:5432", "/elsewhere", 5};
  for (const Row& gone : {row(0, 4, primary, true, true, false),
                          row(0, 4, primary, true, false, true), row(0, 4, primary, false)}) {
    expect_identity(pick(range(0, 0, 31), {gone}), 0, 4);
    EXPECT_TRUE(automatic::is_mine(kSelf, gone));
  }
  // While the primary renews, it is not: a restored copy of a running node
  // picks another identity.
  const Row renewing = row(0, 0, primary, true);
  EXPECT_FALSE(automatic::is_mine(kSelf, renewing));
  expect_identity(pick(range(0, 0, 31), {renewing}), 0, 1);
}

TEST(Pick, ALaterTimelineOfMySystemIsNotMine) {
  // The old primary after its standby was promoted: the row is the standby's,
  // whatever its state.
  const HolderText promoted{"7001", 3, "pg-a:5432", "/data", 11};
  EXPECT_FALSE(automatic::is_mine(kSelf, row(0, 0, promoted, true, true, true)));
  expect_identity(pick(range(0, 0, 31), {row(0, 0, promoted, true, true, true)}), 0, 1);
}

TEST(Pick, MyPlaceWithAnotherTokenIsMineOnlyOnceReleasedOrStale) {
  // The same system, timeline, host and data directory from another
  // postmaster: this node restarted (its row released at the clean shutdown,
  // or stale after a crash), or a clone of a running node (its original
  // renews). A clone picks another identity.
  const HolderText earlier{"7001", 2, "pg-a:5432", "/data", 99};
  EXPECT_FALSE(automatic::is_mine(kSelf, row(0, 3, earlier, true)));
  expect_identity(pick(range(0, 0, 31), {row(0, 0, earlier, true)}), 0, 1);
  expect_identity(pick(range(0, 0, 31), {row(0, 3, earlier, true, true, false)}), 0, 3);
  expect_identity(pick(range(0, 0, 31), {row(0, 3, earlier, true, false, true)}), 0, 3);
  expect_identity(pick(range(0, 0, 31), {row(0, 3, earlier, false)}), 0, 3);
  // A row of 1.6 or earlier has no token (0): the same.
  const HolderText untokened{"7001", 2, "pg-a:5432", "/data", 0};
  EXPECT_FALSE(automatic::is_mine(kSelf, row(0, 3, untokened, true)));
}

TEST(Pick, TheSameTimelineElsewhereIsNotMine) {
  // A copy of the data directory: same system and timeline, another host or
  // data directory. It waits for the lease like any other node, released or
  // stale.
  const HolderText other_host{"7001", 2, "pg-c:5432", "/data", 11};
  const HolderText other_directory{"7001", 2, "pg-a:5432", "/data2", 11};
  EXPECT_FALSE(automatic::is_mine(kSelf, row(0, 0, other_host, true, true, true)));
  EXPECT_FALSE(automatic::is_mine(kSelf, row(0, 0, other_directory, true, true, true)));
  EXPECT_TRUE(automatic::is_mine(kSelf, row(0, 0, kSelf, true)));
  expect_identity(
      pick(range(0, 0, 31), {row(0, 0, other_host, true), row(0, 1, other_directory, true)}), 0, 2);
  // Expired, they are free, like anyone's, and the lowest comes first.
  expect_identity(pick(range(0, 0, 31), {row(0, 3, other_host, false)}), 0, 0);
}

TEST(Pick, AnotherSystemIsNeverMine) {
  const HolderText older{"7002", 1, "pg-a:5432", "/data", 11};
  EXPECT_FALSE(automatic::is_mine(kSelf, row(0, 0, older, true, true, true)));
}

TEST(Pick, AFullRangeGivesNone) {
  std::vector<Row> rows;
  for (int worker = 0; worker <= 3; worker++) rows.push_back(row(2, worker, kOther, true));
  EXPECT_FALSE(pick(range(2, 2, 3), rows).found);
  // One of them expired: that one.
  rows[2].live = false;
  expect_identity(pick(range(2, 2, 3), rows), 2, 2);
}

TEST(Pick, AFullDatacenterGoesOnToTheNext) {
  std::vector<Row> rows;
  for (int worker = 0; worker <= 3; worker++) rows.push_back(row(0, worker, kOther, true));
  rows.push_back(row(1, 0, kOther, true));
  expect_identity(pick(range(0, 2, 3), rows), 1, 1);
  for (int worker = 1; worker <= 3; worker++) rows.push_back(row(1, worker, kOther, true));
  expect_identity(pick(range(0, 2, 3), rows), 2, 0);
  for (int worker = 0; worker <= 3; worker++) rows.push_back(row(2, worker, kOther, true));
  EXPECT_FALSE(pick(range(0, 2, 3), rows).found);
}

TEST(Pick, ASingleDatacenterRangeIgnoresTheOthers) {
  // Rows of datacenters 0 and 2, mine included, are outside the range (1, 1).
  const std::vector<Row> rows{row(0, 0, kSelf, true), row(1, 0, kOther, true),
                              row(1, 1, kOther, true), row(2, 5, kSelf, true)};
  expect_identity(pick(range(1, 1, 31), rows), 1, 2);
  // A worker_id past the range's last is outside it too.
  expect_identity(pick(range(1, 1, 1), {row(1, 0, kOther, true), row(1, 7, kSelf, true)}), 1, 1);
}

TEST(Pick, RowsInAnyOrderGiveTheSameIdentity) {
  std::vector<Row> rows{row(0, 0, kOther, true), row(0, 1, kOther, true), row(0, 2, kOther, false),
                        row(0, 3, kOther, true), row(1, 0, kOther, true), row(0, 5, kOther, true)};
  std::vector<Row> mine = rows;
  mine.push_back(row(1, 2, kSelf, false));
  mine.push_back(row(0, 4, kSelf, false));
  for (int turn = 0; turn < 20; turn++) {
    std::rotate(rows.begin(), rows.begin() + 1, rows.end());
    if (turn % 3 == 0) std::reverse(rows.begin(), rows.end());
    expect_identity(pick(range(0, 1, 5), rows), 0, 2);
    std::rotate(mine.begin(), mine.begin() + 3, mine.end());
    if (turn % 2 == 0) std::reverse(mine.begin(), mine.end());
    expect_identity(pick(range(0, 1, 5), mine), 0, 4);  // the first of mine, in order
  }
}

TEST(Pick, AnEmptyRangeGivesNone) {
  EXPECT_FALSE(pick(range(2, 1, 31), {}).found);
  EXPECT_FALSE(pick(range(0, 0, -1), {}).found);
}

TEST(Pick, TheRangeOfALayout) {
  const Layout layout;  // 5 datacenter bits, 5 worker bits
  const Range every = automatic::range_of(layout, -1);
  EXPECT_EQ(every.first_datacenter_id, 0);
  EXPECT_EQ(every.last_datacenter_id, 31);
  EXPECT_EQ(every.last_worker_id, 31);
  const Range one = automatic::range_of(layout, 3);
  EXPECT_EQ(one.first_datacenter_id, 3);
  EXPECT_EQ(one.last_datacenter_id, 3);
  EXPECT_EQ(one.last_worker_id, 31);
  // No datacenter field: datacenter 0 only.
  const Layout workers_only(41, 0, 10, 12, kDefaultEpochMs);
  const Range flat = automatic::range_of(workers_only, -1);
  EXPECT_EQ(flat.first_datacenter_id, 0);
  EXPECT_EQ(flat.last_datacenter_id, 0);
  EXPECT_EQ(flat.last_worker_id, 1023);
}

}  // namespace
}  // namespace snowflake
