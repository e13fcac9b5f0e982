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

Holder node(const char* host, int64_t timeline = 1, const char* system = "42") {
  return Holder{system, timeline, host, "/data"};
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

TEST(RegistryRow, ALiveRowIsRenewedOnlyByItsHolderOrAPromotedStandby) {
  Row row;
  (void)registry_row::claim(row, request(node("a"), 1800000040000), kNow);
  // Another node, or a clone (same system and timeline, elsewhere), waits.
  EXPECT_FALSE(registry_row::claim(row, request(node("b", 1, "7"), 1), kNow + kSecond).claimed);
  EXPECT_FALSE(registry_row::claim(row, request(node("c"), 1), kNow + kSecond).claimed);
  // The holder renews: claimed_at stays, nothing inherited.
  const auto renewal = registry_row::claim(row, request(node("a"), 1800000050000), kNow + kSecond);
  EXPECT_TRUE(renewal.claimed);
  EXPECT_FALSE(renewal.taken);
  EXPECT_EQ(row.claimed_at_us, kNow);
  EXPECT_EQ(renewal.ids_before_ms, 1800000050000);
  // A promoted standby (a later timeline) takes it at once, above the holder.
  const auto promotion =
      registry_row::claim(row, request(node("s", 2), 1800000002000), kNow + 2 * kSecond);
  EXPECT_TRUE(promotion.claimed);
  EXPECT_TRUE(promotion.taken);
  EXPECT_EQ(promotion.taken_from, "a");
  EXPECT_EQ(promotion.inherited_ms, 1800000050000);
  EXPECT_EQ(promotion.ids_before_ms, 1800000050000 + 30001);
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
}

}  // namespace
}  // namespace snowflake
