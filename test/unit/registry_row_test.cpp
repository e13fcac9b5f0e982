// The registry's statements as pure functions (src/core/registry_row.hpp):
// claims, renewals, takeovers, promotions, clones, and the release. The
// differential test of test/simulation/ checks the same functions against the
// SQL in a real PostgreSQL.
#include <gtest/gtest.h>

#include <cstdint>

#include "registry_row.hpp"

namespace snowflake {
namespace {

using registry_row::ClaimRequest;
using registry_row::Holder;
using registry_row::Row;

constexpr int64_t kSecond = 1000000;
constexpr int64_t kNow = 1800000000 * kSecond;

Holder node(const char* host, int64_t timeline = 1, const char* system = "42", int64_t token = 1) {
  return Holder{system, timeline, host, "/data", token};
}

ClaimRequest request(const Holder& self, int64_t ids_before_ms) {
  return ClaimRequest{self, 30000, ids_before_ms, 30001};
}

TEST(RegistryRow, AFreeIdentityIsInsertedWithoutInheritance) {
  Row row;
  const auto answer = registry_row::claim(row, request(node("a"), 1800000040000), kNow);
  EXPECT_TRUE(answer.claimed);
  EXPECT_FALSE(answer.taken);
  EXPECT_EQ(answer.inherited_ms, -1);
  EXPECT_EQ(answer.ids_before_ms, 1800000040000);
  EXPECT_EQ(row.expires_at_us, kNow + 30 * kSecond);
  EXPECT_EQ(row.claimed_at_us, kNow);
}

TEST(RegistryRow, ALiveRowIsRenewedOnlyByItsHolder) {
  Row row;
  (void)registry_row::claim(row, request(node("a"), 1800000040000), kNow);
  // Another node, a copy (same system and timeline, elsewhere), a promoted
  // standby or restored copy (a later timeline), a clone (the same place,
  // another postmaster's token): all wait while the holder renews.
  EXPECT_FALSE(registry_row::claim(row, request(node("b", 1, "7"), 1), kNow + kSecond).claimed);
  EXPECT_FALSE(registry_row::claim(row, request(node("c"), 1), kNow + kSecond).claimed);
  EXPECT_FALSE(registry_row::claim(row, request(node("s", 2), 1), kNow + kSecond).claimed);
  EXPECT_FALSE(registry_row::claim(row, request(node("a", 1, "42", 2), 1), kNow + kSecond).claimed);
  // The holder renews: claimed_at stays, nothing inherited.
  const auto renewal = registry_row::claim(row, request(node("a"), 1800000050000), kNow + kSecond);
  EXPECT_TRUE(renewal.claimed);
  EXPECT_FALSE(renewal.taken);
  EXPECT_EQ(row.claimed_at_us, kNow);
  EXPECT_EQ(renewal.ids_before_ms, 1800000050000);
}

TEST(RegistryRow, ASuccessorTakesAStaleRowAboveItsHolder) {
  Row row;
  (void)registry_row::claim(row, request(node("a"), 1800000050000), kNow);
  // A lease of 30 s: stale once not renewed for more than 20 s.
  EXPECT_FALSE(registry_row::stale(row, kNow + 20 * kSecond));
  EXPECT_TRUE(registry_row::stale(row, kNow + 20 * kSecond + 1));
  EXPECT_FALSE(registry_row::claim(row, request(node("s", 2), 1), kNow + 20 * kSecond).claimed);
  // A promoted standby (a failover: the primary stopped renewing).
  const auto promotion =
      registry_row::claim(row, request(node("s", 2), 1800000002000), kNow + 21 * kSecond);
  EXPECT_TRUE(promotion.claimed);
  EXPECT_TRUE(promotion.taken);
  EXPECT_EQ(promotion.taken_from, "a");
  EXPECT_EQ(promotion.inherited_ms, 1800000050000);
  EXPECT_EQ(promotion.ids_before_ms, 1800000050000 + 30001);
  // Another system, though, waits for the lease to expire.
  Row other;
  (void)registry_row::claim(other, request(node("a"), 1800000050000), kNow);
  EXPECT_FALSE(
      registry_row::claim(other, request(node("b", 1, "7"), 1), kNow + 21 * kSecond).claimed);
  EXPECT_TRUE(
      registry_row::claim(other, request(node("b", 1, "7"), 1), kNow + 31 * kSecond).claimed);
}

TEST(RegistryRow, ACloneTakesTheRowOnlyOnceStaleAndThenAboveTheOriginal) {
  Row row;
  const Holder original = node("a", 1, "42", 1);
  const Holder clone = node("a", 1, "42", 2);
  (void)registry_row::claim(row, request(original, 1800000050000), kNow);
  for (int64_t t = kNow + 10 * kSecond; t < kNow + 60 * kSecond; t += 10 * kSecond) {
    EXPECT_FALSE(registry_row::claim(row, request(clone, 1), t - kSecond).claimed);
    EXPECT_TRUE(registry_row::claim(row, request(original, 1800000050000), t).claimed);
  }
  const int64_t renewed = row.renewed_at_us;
  const auto taken =
      registry_row::claim(row, request(clone, 1800000000000), renewed + 21 * kSecond);
  EXPECT_TRUE(taken.claimed);
  EXPECT_TRUE(taken.taken);
  EXPECT_EQ(taken.inherited_ms, 1800000050000);
  EXPECT_EQ(row.holder.token, 2);
  // The original's next renewal is refused: it is fenced.
  EXPECT_FALSE(registry_row::claim(row, request(original, 1), renewed + 22 * kSecond).claimed);
}

TEST(RegistryRow, AReleasedRowPassesAtOnceToASuccessorOnly) {
  Row row;
  const Holder a = node("a", 1, "42", 1);
  (void)registry_row::claim(row, request(a, 1800000050000), kNow);
  EXPECT_TRUE(registry_row::release(row, a, row.renewed_at_us, 1800000000500));
  EXPECT_TRUE(row.released);
  // Another system still waits for the lease.
  EXPECT_FALSE(registry_row::claim(row, request(node("b", 1, "7"), 1), kNow + kSecond).claimed);
  // The same node restarted (a new token) takes it at once, above its last ID.
  const auto restart =
      registry_row::claim(row, request(node("a", 1, "42", 3), 1800000031000), kNow + 2 * kSecond);
  EXPECT_TRUE(restart.claimed);
  EXPECT_TRUE(restart.taken);
  EXPECT_EQ(restart.inherited_ms, 1800000000500);
  EXPECT_FALSE(row.released);
  // A promoted standby after a switchover does too.
  EXPECT_TRUE(registry_row::release(row, node("a", 1, "42", 3), row.renewed_at_us, 1800000001000));
  EXPECT_TRUE(registry_row::claim(row, request(node("s", 2), 1), kNow + 3 * kSecond).claimed);
}

TEST(RegistryRow, TheSameHolderRenewsAReleasedRow) {
  // The worker alone restarted after a release (the postmaster, and so its
  // token, stayed): it renews, claimed_at kept, nothing inherited.
  Row row;
  const Holder a = node("a");
  (void)registry_row::claim(row, request(a, 1800000050000), kNow);
  EXPECT_TRUE(registry_row::release(row, a, row.renewed_at_us, 1800000000500));
  const auto again = registry_row::claim(row, request(a, 1800000040000), kNow + kSecond);
  EXPECT_TRUE(again.claimed);
  EXPECT_FALSE(again.taken);
  EXPECT_EQ(row.claimed_at_us, kNow);
  EXPECT_FALSE(row.released);
}

TEST(RegistryRow, AnUntokenedRowIsASuccessorsOnlyOnceStale) {
  // A row written by a node of 1.6 (token 0): the node upgraded and restarted
  // is a successor, as after a crash.
  Row row;
  (void)registry_row::claim(row, request(node("a", 1, "42", 0), 1800000050000), kNow);
  EXPECT_FALSE(registry_row::claim(row, request(node("a"), 1), kNow + kSecond).claimed);
  EXPECT_TRUE(registry_row::claim(row, request(node("a"), 1), kNow + 21 * kSecond).claimed);
}

TEST(RegistryRow, AnExpiredRowPassesWithTheLargestIdsBeforeOfItsHolders) {
  Row row;
  (void)registry_row::claim(row, request(node("a"), 1800000040000), kNow);
  const int64_t later = kNow + 31 * kSecond;
  const auto b = registry_row::claim(row, request(node("b", 1, "7"), 1800000000000), later);
  EXPECT_TRUE(b.claimed);
  EXPECT_EQ(b.inherited_ms, 1800000040000);
  // b's own report is lower than a's: the row keeps a's, and a's reclaim
  // inherits both.
  const auto a = registry_row::claim(row, request(node("a"), 1800000000000), later + 31 * kSecond);
  EXPECT_TRUE(a.claimed);
  EXPECT_EQ(a.taken_from, "b");
  EXPECT_EQ(a.inherited_ms, 1800000040000 + 30001);
}

// A renewal reaches the registry late: the worker gave up on it (its deadline
// passed), sent the next one, with a later ids_before the registry accepted,
// and returned IDs up to that. Applied after it, the late one would lower the
// row's ids_before below those IDs, and a node taking over after an outage
// would start there. Found by the simulator (seed 1161 of a long run); before
// it, the row took the late renewal's ids_before.
TEST(RegistryRow, ALateRenewalNeverLowersIdsBefore) {
  Row row;
  const Holder a = node("a");
  (void)registry_row::claim(row, request(a, 1800000070000), kNow);
  const auto late = registry_row::claim(row, request(a, 1800000040000), kNow + kSecond);
  EXPECT_TRUE(late.claimed);
  EXPECT_EQ(late.ids_before_ms, 1800000070000);
  EXPECT_EQ(row.ids_before_us, 1800000070000 * 1000);
}

// A release reaches the registry late: after the node restarted and claimed
// again, reporting a higher ids_before (its IDs since the restart lie below
// it). Applied, it would lower the row below IDs already returned, and a
// node taking over would start there. It applies only over the renewal the
// releasing node last saw. Before issue 29 the release matched any row of
// the same holder.
TEST(RegistryRow, ALateReleaseChangesNothingAfterALaterRenewal) {
  Row row;
  const Holder a = node("a");
  (void)registry_row::claim(row, request(a, 1800000040000), kNow);
  const int64_t seen = row.renewed_at_us;
  (void)registry_row::claim(row, request(a, 1800000090000), kNow + 5 * kSecond);
  EXPECT_FALSE(registry_row::release(row, a, seen, 1800000001000));
  EXPECT_EQ(row.ids_before_us, 1800000090000 * 1000);
  EXPECT_TRUE(registry_row::release(row, a, row.renewed_at_us, 1800000001000));
  EXPECT_EQ(row.ids_before_us, 1800000001000 * 1000);
  EXPECT_FALSE(registry_row::release(row, node("b"), row.renewed_at_us, 1));
  // Nor another postmaster of the same data directory (another token).
  EXPECT_FALSE(registry_row::release(row, node("a", 1, "42", 2), row.renewed_at_us, 1));
}

}  // namespace
}  // namespace snowflake
