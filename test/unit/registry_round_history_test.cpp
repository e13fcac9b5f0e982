// The registry worker's round (src/core/registry_round.hpp) and the
// registry's history (src/core/registry_history.hpp): the probe's identity,
// a record of it that could not be read, a claim's table, its row gone or
// older than seen; the floor of every claim but a renewal after a change, and
// the gap of a lease held.
#include <gtest/gtest.h>

#include <cstdint>

#include "registry_round.hpp"
#include "registry_round_support.hpp"

namespace snowflake::round_test {
namespace {

TEST(RegistryRound, AProbeOfAnotherIdentityIsAChangeOfHistory) {
  Worker worker;
  worker.settings.max_lead_ms = 50;
  worker.round.history.identity = registry_history::Identity{7001, 1, kTable};
  worker.hold();
  ASSERT_EQ(worker.round.history.floor_ms, 0);
  const int64_t cap = worker.round.ids_before;
  worker.now.mono_us = worker.round.next_attempt_us;
  worker.pass_us(1000);
  (void)worker.tick();
  // A failover: another timeline; the renewal then goes through.
  const Output out =
      worker.answer(worker.probed(worker.claimed(), registry_history::Identity{7001, 2, kTable}));
  ASSERT_EQ(out.change_count, 1);
  const HistoryChange& change = out.changes[0];
  EXPECT_EQ(change.what, HistoryChange::kIdentity);
  EXPECT_EQ(change.before.timeline, 1);
  EXPECT_EQ(change.after.timeline, 2);
  const int64_t floor_ms = worker.now.wall_ms + kLeaseMs + 50 + 1;
  EXPECT_EQ(change.floor_ms, floor_ms);
  EXPECT_EQ(worker.round.history.floor_ms, floor_ms);
  EXPECT_EQ(worker.round.history.changed_at_ms, worker.now.wall_ms);
  EXPECT_EQ(worker.round.history.identity.timeline, 2);
  // Held: the gap above the cap it had, kept by the renewal.
  EXPECT_EQ(change.gap_from, cap);
  EXPECT_EQ(change.gap_until, worker.settings.layout.timestamp_from_unix_ms(floor_ms));
  EXPECT_EQ(worker.round.gap_from, cap);
  EXPECT_EQ(count(out, Action::kClaimAboveFloor), 0);  // a renewal is not raised
  EXPECT_EQ(count(out, Action::kRaiseFloor), 0);
  EXPECT_TRUE(before(out, Action::kHistoryChanged, Action::kPublish));
}

TEST(RegistryRound, AfterAChangeEveryClaimButARenewalStartsAtTheFloor) {
  Worker worker;
  worker.round.history.identity = registry_history::Identity{7001, 1, kTable};
  (void)worker.tick();
  Answer remade = worker.claimed();
  remade.table = 16400;
  const Output out =
      worker.answer(worker.probed(remade, registry_history::Identity{7001, 1, 16400}));
  const int64_t floor_ms = worker.now.wall_ms + kLeaseMs + 1;
  ASSERT_EQ(out.change_count, 1);
  EXPECT_EQ(count(out, Action::kClaimAboveFloor), 1);
  ASSERT_EQ(count(out, Action::kRaiseFloor), 1);
  EXPECT_EQ(out.floor_ms, floor_ms);
  EXPECT_EQ(out.floor, worker.settings.layout.timestamp_from_unix_ms(floor_ms));
  EXPECT_EQ(out.floor_from, FloorFrom::kForgottenHolder);
  EXPECT_EQ(worker.round.floor, out.floor);
  EXPECT_EQ(worker.round.gap_until, 0);  // the floor covers it
  // A takeover names its previous holder, and starts at the later of the two.
  Worker taker;
  taker.round.history.floor_ms = kWallMs + 10000;
  taker.round.history.changed_at_ms = kWallMs - 1000;
  (void)taker.tick();
  Answer answer = taker.claimed();
  answer.taken = true;
  answer.inherited_ms = kWallMs + 5000;
  Output taken = taker.answer(answer);
  EXPECT_EQ(taken.floor_ms, kWallMs + 10000);
  EXPECT_EQ(taken.floor_from, FloorFrom::kPreviousHolder);
  // A floor the clock has passed raises nothing worth a LOG.
  Worker later;
  later.round.history.floor_ms = kWallMs - 10;
  (void)later.tick();
  taken = later.answer(later.claimed());
  EXPECT_EQ(count(taken, Action::kClaimAboveFloor), 0);
  EXPECT_EQ(taken.floor_from, FloorFrom::kNone);
}

TEST(RegistryRound, ARecordThatCouldNotBeReadIsAChangeAtTheFirstProbe) {
  Worker worker;
  worker.round.history_unreadable = true;
  (void)worker.tick();
  Output out =
      worker.answer(worker.probed(worker.claimed(), registry_history::Identity{7001, 1, kTable}));
  ASSERT_EQ(out.change_count, 1);
  EXPECT_EQ(out.changes[0].what, HistoryChange::kUnreadable);
  EXPECT_FALSE(worker.round.history_unreadable);
  EXPECT_EQ(worker.round.history.longest_lease_ms, kLeaseMs);
  // A failed request after a probe still counts the probe.
  Worker failing;
  failing.round.history.identity = registry_history::Identity{7001, 1, kTable};
  (void)failing.tick();
  out = failing.answer(failing.probed(outcome(Answer::kFailed), {7002, 1, kTable}));
  EXPECT_EQ(out.change_count, 1);
  EXPECT_GT(failing.round.history.floor_ms, 0);
}

TEST(RegistryRound, AClaimsTableOrRowGoneOrOlderIsAChangeOfHistory) {
  // The table made again while the connection stayed open.
  Worker worker;
  worker.hold();
  worker.now.mono_us = worker.round.next_attempt_us;
  (void)worker.tick();
  Answer answer = worker.claimed();
  answer.table = kTable + 1;
  Output out = worker.answer(answer);
  ASSERT_EQ(out.change_count, 1);
  EXPECT_EQ(out.changes[0].what, HistoryChange::kIdentity);
  EXPECT_EQ(out.changes[0].after.table, kTable + 1);
  // The row it saw gone.
  const int64_t seen = worker.round.row_seen.renewed_at_us;
  worker.now.mono_us = worker.round.next_attempt_us;
  worker.pass_us(1000);
  (void)worker.tick();
  answer = worker.claimed();
  answer.table = kTable + 1;
  answer.existed = false;
  out = worker.answer(answer);
  ASSERT_EQ(out.change_count, 1);
  EXPECT_EQ(out.changes[0].what, HistoryChange::kRowGone);
  EXPECT_EQ(out.changes[0].seen_renewed_at_us, seen);
  EXPECT_EQ(out.changes[0].datacenter_id, 1);
  // Older than seen.
  worker.now.mono_us = worker.round.next_attempt_us;
  worker.pass_us(1000);
  (void)worker.tick();
  answer = worker.claimed();
  answer.table = kTable + 1;
  answer.previous_renewed_at_us = worker.round.row_seen.renewed_at_us - 1;
  out = worker.answer(answer);
  ASSERT_EQ(out.change_count, 1);
  EXPECT_EQ(out.changes[0].what, HistoryChange::kRowOlder);
  EXPECT_EQ(out.changes[0].previous_renewed_at_us, answer.previous_renewed_at_us);
  // As new as seen: none. An infinite renewed_at is remembered as none.
  worker.now.mono_us = worker.round.next_attempt_us;
  (void)worker.tick();
  answer = worker.claimed();
  answer.table = kTable + 1;
  answer.previous_renewed_at_us = worker.round.row_seen.renewed_at_us;
  answer.renewed_at_us = INT64_MAX;
  EXPECT_EQ(worker.answer(answer).change_count, 0);
  EXPECT_EQ(worker.round.row_seen.renewed_at_us, 0);
}

}  // namespace
}  // namespace snowflake::round_test
