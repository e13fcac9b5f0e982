// The registry worker's round (src/core/registry_round.hpp): every state and
// every transition, as the worker (src/pg/registry/worker.cpp) and the
// simulator (test/simulation/) drive it: starts and reloads, the loop's ticks
// in each condition, a configured identity claimed, renewed, refused, raced
// and failed, automatic leasing's picks and lost claims, the takeover's
// floor, the probes, and the release at shutdown. The registry's history is
// registry_round_history_test.cpp's.
#include <gtest/gtest.h>

#include <cstdint>

#include "lease.hpp"
#include "pick.hpp"
#include "registry_round.hpp"
#include "registry_round_support.hpp"

namespace snowflake::round_test {
namespace {

TEST(RegistryRound, TimesOfTheRequestsAndProbes) {
  EXPECT_EQ(registry_round::request_timeout_ms(30000), 7500);
  EXPECT_EQ(registry_round::request_timeout_ms(3000), 750);
  EXPECT_EQ(registry_round::request_timeout_ms(3600000), 10000);
  EXPECT_EQ(registry_round::probe_interval_us(30000), 30000000);
  EXPECT_EQ(registry_round::probe_interval_us(3600000), 60000000);
}

TEST(RegistryRound, BeginsStartingOrDisabled) {
  Worker worker;
  EXPECT_EQ(worker.round.state, State::kStarting);
  EXPECT_EQ(worker.round.target_worker_id, 3);
  worker.settings.registry_configured = false;
  EXPECT_EQ(registry_round::begin(worker.settings).state, State::kDisabled);
}

TEST(RegistryRound, AStartKeepsTheLeaseOfTheSameIdentitySettings) {
  Worker worker;
  worker.hold();
  const Output out = worker.event(Event::kStart);
  EXPECT_EQ(out.count, 0);
  EXPECT_EQ(worker.round.state, State::kHeld);
}

TEST(RegistryRound, OtherIdentitySettingsForgetWhatWasClaimed) {
  Worker worker;
  worker.hold();
  worker.settings.worker_id = 4;
  worker.settings.node = worker.settings.layout.node(1, 4);
  const Output out = worker.event(Event::kReload);
  EXPECT_TRUE(before(out, Action::kReset, Action::kPublish));
  EXPECT_EQ(worker.round.state, State::kStarting);
  EXPECT_EQ(worker.round.node, -1);
  EXPECT_EQ(worker.round.ids_before, 0);
  EXPECT_EQ(worker.round.target_worker_id, 4);
  EXPECT_EQ(out.wake_at_us, 0);  // at once
  // Without a registry, disabled.
  worker.settings.registry_configured = false;
  worker.settings.worker_id = 5;
  (void)worker.event(Event::kReload);
  EXPECT_EQ(worker.round.state, State::kDisabled);
}

TEST(RegistryRound, ReloadOfTheRegistryOrTheLease) {
  Worker worker;
  worker.hold();
  ASSERT_GT(worker.round.next_attempt_us, worker.now.mono_us);
  Event reload;
  reload.kind = Event::kReload;
  reload.lease_changed = true;
  EXPECT_EQ(worker.step(reload).wake_at_us, 0);
  worker.round.next_attempt_us = worker.now.mono_us + 1;
  reload = Event{};
  reload.kind = Event::kReload;
  reload.connection_elsewhere = true;
  Output out = worker.step(reload);
  EXPECT_EQ(count(out, Action::kDisconnect), 1);
  EXPECT_EQ(out.wake_at_us, 0);
  // Another registry: what was seen of the last one's rows and probes goes,
  // the history the node remembers stays.
  worker.round.history.identity = registry_history::Identity{7001, 1, kTable};
  reload = Event{};
  reload.kind = Event::kReload;
  reload.registry_changed = true;
  out = worker.step(reload);
  EXPECT_EQ(count(out, Action::kForgetRegistry), 1);
  EXPECT_EQ(worker.round.row_seen.table, 0);
  EXPECT_EQ(worker.round.next_probe_us, 0);
  EXPECT_EQ(worker.round.history.identity.system_identifier, 7001u);
  EXPECT_EQ(worker.round.state, State::kHeld);
}

TEST(RegistryRound, WithoutARegistryDisabled) {
  Worker worker;
  worker.hold();
  worker.settings.registry_configured = false;
  worker.now.connected = true;
  const Output out = worker.tick();
  EXPECT_EQ(count(out, Action::kDisconnect), 1);
  EXPECT_EQ(count(out, Action::kForgetRegistry), 1);
  EXPECT_TRUE(before(out, Action::kReset, Action::kPublish));
  EXPECT_EQ(worker.round.state, State::kDisabled);
  EXPECT_FALSE(registry_round::grant(worker.round).held);
  EXPECT_EQ(out.wake_at_us, -1);
  // Nothing more while it stays so.
  worker.now.connected = false;
  EXPECT_EQ(worker.tick().count, 0);
}

TEST(RegistryRound, InRecoveryAStandbyLooksForItsPromotion) {
  Worker worker;
  worker.settings.in_recovery = true;
  worker.now.connected = true;
  Output out = worker.tick();
  EXPECT_EQ(worker.round.state, State::kStandby);
  EXPECT_EQ(count(out, Action::kDisconnect), 1);
  EXPECT_EQ(out.wake_at_us, worker.now.mono_us + registry_round::kRecoveryPollUs);
  EXPECT_EQ(out.request.kind, Request::kNone);
  // Promoted: starting, and the claim at once.
  worker.settings.in_recovery = false;
  worker.now.connected = false;
  out = worker.tick();
  EXPECT_EQ(worker.round.state, State::kStarting);
  EXPECT_EQ(out.request.kind, Request::kClaim);
}

TEST(RegistryRound, AWorkerIdWithoutADatacenterIdIsUnconfigured) {
  Worker worker;
  worker.settings.node = -1;
  const Output out = worker.tick();
  EXPECT_EQ(worker.round.state, State::kUnconfigured);
  EXPECT_EQ(out.request.kind, Request::kNone);
  EXPECT_EQ(out.wake_at_us, -1);
  worker.settings.node = worker.settings.layout.node(1, 3);
  EXPECT_EQ(worker.tick().request.kind, Request::kClaim);
  EXPECT_EQ(worker.round.state, State::kStarting);
}

TEST(RegistryRound, EveryStateOutsideTheRoundStartsItAgain) {
  for (const State state :
       {State::kDisabled, State::kStandby, State::kUnconfigured, State::kReleased}) {
    Worker worker;
    worker.round.state = state;
    worker.round.next_attempt_us = worker.now.mono_us + 1000000;
    const Output out = worker.tick();
    EXPECT_EQ(worker.round.state, State::kStarting) << static_cast<int>(state);
    EXPECT_EQ(out.request.kind, Request::kClaim) << static_cast<int>(state);
  }
  // The states of the round itself wait for their time.
  for (const State state :
       {State::kStarting, State::kConflict, State::kUnreachable, State::kExhausted, State::kHeld}) {
    Worker worker;
    worker.round.state = state;
    worker.round.next_attempt_us = worker.now.mono_us + 1000000;
    const Output out = worker.tick();
    EXPECT_EQ(worker.round.state, state);
    EXPECT_EQ(out.count, 0);
    EXPECT_EQ(out.request.kind, Request::kNone);
    EXPECT_EQ(out.wake_at_us, worker.now.mono_us + 1000000);
  }
}

TEST(RegistryRound, AClaimedIdentityIsHeldUnderTheLeaseRule) {
  Worker worker;
  const Output asked = worker.tick();
  ASSERT_EQ(asked.request.kind, Request::kClaim);
  EXPECT_EQ(asked.request.datacenter_id, 1);
  EXPECT_EQ(asked.request.worker_id, 3);
  EXPECT_EQ(asked.request.cap_ms, 0);  // a new claim
  EXPECT_TRUE(asked.request.probe);    // a new connection
  EXPECT_EQ(asked.wake_at_us, -1);     // at the answer
  const int64_t sent = worker.now.mono_us;
  Answer answer = worker.claimed();
  worker.pass_us(2000);
  const Output out = worker.answer(answer);
  EXPECT_TRUE(before(out, Action::kRecordHeld, Action::kPublish));
  EXPECT_EQ(count(out, Action::kRaiseFloor), 0);
  const lease::Grant grant = registry_round::grant(worker.round);
  EXPECT_TRUE(grant.held);
  EXPECT_EQ(grant.node, worker.settings.layout.node(1, 3));
  // Counted from the sending, less a tenth of the lease.
  EXPECT_EQ(grant.valid_until_us, sent + kLeaseUs - kLeaseUs / 10);
  EXPECT_EQ(grant.ids_before, worker.settings.layout.timestamp_from_unix_ms(answer.ids_before_ms));
  EXPECT_EQ(worker.round.renewed_at_us, answer.renewed_at_us);
  EXPECT_EQ(worker.round.lease_ms, kLeaseMs);
  // The renewal a third of a lease after the claim was sent.
  EXPECT_EQ(out.wake_at_us, sent + kLeaseUs / 3);
  EXPECT_EQ(out.request.kind, Request::kNone);
}

TEST(RegistryRound, ARenewalReportsItsCapAndProbesOnlyWhenDue) {
  Worker worker;
  worker.hold();
  worker.now.connected = true;
  worker.now.mono_us = worker.round.next_attempt_us;
  Output out = worker.tick();
  ASSERT_EQ(out.request.kind, Request::kClaim);
  EXPECT_EQ(out.request.cap_ms, lease::cap_ms(worker.settings.layout, worker.round.ids_before));
  EXPECT_FALSE(out.request.probe);  // probed a lease ago at most
  (void)worker.answer(worker.claimed());
  worker.now.mono_us = worker.round.next_probe_us;
  out = worker.tick();
  EXPECT_TRUE(out.request.probe);
  EXPECT_EQ(worker.round.next_probe_us,
            worker.now.mono_us + registry_round::probe_interval_us(kLeaseMs));
}

TEST(RegistryRound, AConfiguredIdentityHeldByAnotherIsAConflict) {
  Worker worker;
  (void)worker.tick();
  const Output out = worker.answer(worker.claimed(Answer::kTaken));
  EXPECT_EQ(worker.round.state, State::kConflict);
  EXPECT_EQ(worker.round.datacenter_id, 1);
  EXPECT_EQ(worker.round.worker_id, 3);
  EXPECT_FALSE(registry_round::grant(worker.round).held);
  EXPECT_TRUE(before(out, Action::kRecordConflict, Action::kPublish));
  EXPECT_EQ(out.wake_at_us, worker.now.mono_us + 1000000);
  // A lease held and then refused: dropped.
  worker.round = registry_round::begin(worker.settings);
  worker.hold();
  worker.now.mono_us = worker.round.next_attempt_us;
  (void)worker.tick();
  (void)worker.answer(worker.claimed(Answer::kTaken));
  EXPECT_EQ(worker.round.state, State::kConflict);
  EXPECT_EQ(worker.round.valid_until_us, 0);
}

TEST(RegistryRound, ARaceLostIsTriedAgainSoon) {
  Worker worker;
  (void)worker.tick();
  const Output out = worker.answer(outcome(Answer::kRace));
  EXPECT_EQ(out.count, 0);  // nothing published
  EXPECT_EQ(worker.round.state, State::kStarting);
  EXPECT_EQ(out.wake_at_us, worker.now.mono_us + registry_round::kRaceRetryUs);
}

TEST(RegistryRound, AFailureKeepsALeaseHeldUntilItRunsOut) {
  Worker worker;
  worker.hold();
  const lease::Grant held = registry_round::grant(worker.round);
  worker.now.mono_us = worker.round.next_attempt_us;
  (void)worker.tick();
  Output out = worker.answer(outcome(Answer::kFailed));
  EXPECT_EQ(count(out, Action::kDisconnect), 1);
  EXPECT_EQ(count(out, Action::kFailure), 1);
  EXPECT_EQ(out.failure, Output::kRequestFailed);
  EXPECT_TRUE(out.failure_log);
  EXPECT_EQ(worker.round.state, State::kHeld);
  EXPECT_EQ(registry_round::grant(worker.round).valid_until_us, held.valid_until_us);
  EXPECT_EQ(out.wake_at_us, worker.now.mono_us + 1000000);
  // Logged once until the registry answers again.
  worker.now.mono_us = out.wake_at_us;
  (void)worker.tick();
  out = worker.answer(outcome(Answer::kFailed));
  EXPECT_FALSE(out.failure_log);
  worker.now.mono_us = out.wake_at_us;
  (void)worker.tick();
  out = worker.answer(worker.claimed());
  EXPECT_EQ(count(out, Action::kReachedAgain), 1);
  EXPECT_FALSE(worker.round.failure_logged);
}

TEST(RegistryRound, AFailureWithoutALeaseIsUnreachable) {
  Worker worker;
  (void)worker.tick();
  const Output out = worker.answer(outcome(Answer::kFailed));
  EXPECT_EQ(worker.round.state, State::kUnreachable);
  EXPECT_TRUE(before(out, Action::kFailure, Action::kPublish));
  // The retry: a second at most, a third of a short lease.
  Worker short_lease;
  short_lease.settings.lease_ms = 900;
  (void)short_lease.tick();
  EXPECT_EQ(short_lease.answer(outcome(Answer::kFailed)).wake_at_us,
            short_lease.now.mono_us + 300000);
}

TEST(RegistryRound, ARequestTheShutdownCutShortIsNoFailure) {
  Worker worker;
  (void)worker.tick();
  worker.settings.shutting_down = true;
  const Output out = worker.answer(outcome(Answer::kFailed));
  EXPECT_EQ(count(out, Action::kFailure), 0);
  EXPECT_EQ(worker.round.state, State::kStarting);
  EXPECT_FALSE(worker.round.failure_logged);
}

TEST(RegistryRound, NothingWhileARequestIsInFlight) {
  Worker worker;
  (void)worker.tick();
  worker.pass_us(10000000);
  const Output out = worker.tick();
  EXPECT_EQ(out.count, 0);
  EXPECT_EQ(out.request.kind, Request::kNone);
  EXPECT_EQ(out.wake_at_us, -1);
  // An answer with none in flight changes nothing.
  Worker idle;
  EXPECT_EQ(idle.answer(idle.claimed()).count, 0);
  EXPECT_EQ(idle.round.state, State::kStarting);
}

// The takeover's floor (src/pg/registry/claim.cpp states the rule): the
// generator raised to it before the lease is published, every ID returned at
// or above it (the Grant's floor), whom it comes from.
TEST(RegistryRound, ATakeoverStartsAboveTheFloorHandedOver) {
  Worker worker;
  (void)worker.tick();
  Answer answer = worker.claimed();
  answer.taken = true;
  answer.inherited_ms = kWallMs + 20000;  // the previous holder's ids_before, ahead of the clock
  const Output out = worker.answer(answer);
  const int64_t floor = lease::floor_from_inherited(worker.settings.layout, answer.inherited_ms);
  ASSERT_EQ(count(out, Action::kRaiseFloor), 1);
  EXPECT_TRUE(before(out, Action::kRaiseFloor, Action::kPublish));
  EXPECT_EQ(out.floor, floor);
  EXPECT_EQ(out.floor_ms, answer.inherited_ms);
  EXPECT_TRUE(out.floor_log);  // ahead of the clock, above the last ID
  EXPECT_EQ(out.floor_from, FloorFrom::kPreviousHolder);
  EXPECT_EQ(worker.round.floor, floor);
  EXPECT_EQ(registry_round::grant(worker.round).floor, floor);
  // A floor already passed is not logged.
  Worker behind;
  (void)behind.tick();
  answer.inherited_ms = kWallMs - 5000;
  const Output passed = behind.answer(answer);
  EXPECT_EQ(count(passed, Action::kRaiseFloor), 1);
  EXPECT_FALSE(passed.floor_log);
}

TEST(RegistryRound, ARenewalKeepsItsFloorAndANewClaimStartsFromNone) {
  Worker worker;
  (void)worker.tick();
  Answer answer = worker.claimed();
  answer.taken = true;
  answer.inherited_ms = kWallMs + 20000;
  (void)worker.answer(answer);
  const int64_t floor = worker.round.floor;
  worker.now.mono_us = worker.round.next_attempt_us;
  (void)worker.tick();
  Output out = worker.answer(worker.claimed());  // a renewal hands nothing over
  EXPECT_EQ(worker.round.floor, floor);
  EXPECT_EQ(out.floor_from, FloorFrom::kKept);
  // Another identity (a reload), claimed anew: no floor.
  worker.settings.worker_id = 4;
  worker.settings.node = worker.settings.layout.node(1, 4);
  (void)worker.event(Event::kReload);
  (void)worker.tick();
  out = worker.answer(worker.claimed());
  EXPECT_EQ(worker.round.floor, 0);
  EXPECT_EQ(out.floor_from, FloorFrom::kNone);
}

TEST(RegistryRound, AutomaticPicksClaimsAndRenews) {
  Worker worker(-1);
  Output out = worker.tick();
  ASSERT_EQ(out.request.kind, Request::kPick);
  EXPECT_TRUE(out.request.probe);
  worker.now.connected = true;
  out = worker.answer(picked(0, 7));
  ASSERT_EQ(out.request.kind, Request::kClaim);
  EXPECT_EQ(out.request.datacenter_id, 0);
  EXPECT_EQ(out.request.worker_id, 7);
  EXPECT_TRUE(out.request.after_pick);
  EXPECT_EQ(out.request.cap_ms, 0);
  EXPECT_FALSE(out.request.probe);  // the same connection
  (void)worker.answer(worker.claimed());
  EXPECT_EQ(worker.round.state, State::kHeld);
  EXPECT_EQ(worker.round.node, worker.settings.layout.node(0, 7));
  // The next round renews it, without a pick.
  worker.now.mono_us = worker.round.next_attempt_us;
  out = worker.tick();
  ASSERT_EQ(out.request.kind, Request::kClaim);
  EXPECT_EQ(out.request.worker_id, 7);
  EXPECT_FALSE(out.request.after_pick);
  EXPECT_GT(out.request.cap_ms, 0);
}

TEST(RegistryRound, AutomaticWithNoneFreeIsExhausted) {
  Worker worker(-1);
  (void)worker.tick();
  const Output out = worker.answer(outcome(Answer::kNoneFree));
  EXPECT_EQ(worker.round.state, State::kExhausted);
  EXPECT_EQ(count(out, Action::kPublish), 1);
  EXPECT_EQ(count(out, Action::kFailure), 0);
  EXPECT_EQ(out.wake_at_us, worker.now.mono_us + 1000000);
  // A failed pick is a failure.
  Worker failing(-1);
  (void)failing.tick();
  EXPECT_EQ(count(failing.answer(outcome(Answer::kFailed)), Action::kFailure), 1);
  EXPECT_EQ(failing.round.state, State::kUnreachable);
}

TEST(RegistryRound, AutomaticPicksAgainAfterLostClaimsUpToTheLimit) {
  Worker worker(-1);
  (void)worker.tick();
  Output out;
  for (int lost = 1; lost <= automatic::kPickAttempts; lost++) {
    out = worker.answer(picked(0, lost));
    ASSERT_EQ(out.request.kind, Request::kClaim);
    // Taken by another node, or its insert came first.
    out = worker.answer(lost % 2 == 0 ? outcome(Answer::kRace) : worker.claimed(Answer::kTaken));
    if (lost < automatic::kPickAttempts) {
      EXPECT_EQ(out.request.kind, Request::kPick) << lost;
      EXPECT_EQ(count(out, Action::kFailure), 0);
    }
  }
  EXPECT_EQ(out.request.kind, Request::kNone);
  EXPECT_EQ(count(out, Action::kFailure), 1);
  EXPECT_EQ(out.failure, Output::kPicksLost);
  EXPECT_EQ(count(out, Action::kDisconnect), 0);
  EXPECT_EQ(worker.round.state, State::kUnreachable);
  EXPECT_EQ(out.wake_at_us, worker.now.mono_us + 1000000);
  // The next round counts anew.
  worker.now.mono_us = out.wake_at_us;
  EXPECT_EQ(worker.tick().request.kind, Request::kPick);
  EXPECT_EQ(worker.round.claims_lost, 0);
}

TEST(RegistryRound, AutomaticGivesUpAHeldIdentityAnotherHoldsAtOnce) {
  Worker worker(-1);
  (void)worker.tick();
  (void)worker.answer(picked(0, 2));
  (void)worker.answer(worker.claimed());
  ASSERT_EQ(worker.round.state, State::kHeld);
  worker.now.mono_us = worker.round.next_attempt_us;
  (void)worker.tick();  // the renewal
  const Output out = worker.answer(worker.claimed(Answer::kTaken));
  EXPECT_EQ(worker.round.state, State::kStarting);
  EXPECT_FALSE(registry_round::grant(worker.round).held);
  EXPECT_EQ(count(out, Action::kPublish), 1);
  EXPECT_EQ(out.request.kind, Request::kPick);
  EXPECT_EQ(worker.round.claims_lost, 1);
}

TEST(RegistryRound, AShutdownReleasesALeaseHeldAfterSayingSo) {
  Worker worker;
  worker.hold();
  const int64_t renewed_at = worker.round.renewed_at_us;
  const Output out = worker.event(Event::kShutdown);
  EXPECT_EQ(worker.round.state, State::kReleased);
  EXPECT_FALSE(registry_round::grant(worker.round).held);
  EXPECT_EQ(count(out, Action::kPublish), 1);  // the View says released first
  ASSERT_EQ(out.request.kind, Request::kRelease);
  EXPECT_EQ(out.request.datacenter_id, 1);
  EXPECT_EQ(out.request.worker_id, 3);
  EXPECT_EQ(out.request.renewed_at_us, renewed_at);
  EXPECT_EQ(out.wake_at_us, -1);  // the worker ends
  // Nothing held, or no registry: nothing to release.
  Worker idle;
  const Output nothing = idle.event(Event::kShutdown);
  EXPECT_EQ(nothing.request.kind, Request::kNone);
  EXPECT_EQ(nothing.count, 0);
  EXPECT_EQ(nothing.wake_at_us, -1);
  Worker unconfigured;
  unconfigured.hold();
  unconfigured.settings.registry_configured = false;
  EXPECT_EQ(unconfigured.event(Event::kShutdown).request.kind, Request::kNone);
  EXPECT_EQ(unconfigured.round.state, State::kHeld);
}

}  // namespace
}  // namespace snowflake::round_test
