// The registry worker's round (src/core/registry_round.hpp): every state and
// every transition, as the worker (src/pg/registry/worker.cpp) and the
// simulator (test/simulation/) drive it: starts and reloads, the loop's ticks
// in each condition, a configured identity claimed, renewed, refused, raced
// and failed, automatic leasing's picks and lost claims, the takeover's
// floor, the probes, the registry's history (its identity, its table, a row
// gone or older, the floor and the gap), and the release at shutdown.
#include <gtest/gtest.h>

#include <cstdint>

#include "layout.hpp"
#include "lease.hpp"
#include "pick.hpp"
#include "registry_round.hpp"

namespace snowflake {
namespace {

using registry_round::Action;
using registry_round::Answer;
using registry_round::Event;
using registry_round::FloorFrom;
using registry_round::HistoryChange;
using registry_round::Output;
using registry_round::Request;
using registry_round::State;

constexpr int64_t kLeaseMs = 30000;
constexpr int64_t kLeaseUs = kLeaseMs * 1000;
constexpr int64_t kWallMs = 1800000000000;  // 2027-01-15
constexpr int64_t kTable = 16385;

// A worker and its registry, stepped by hand.
struct Worker {
  registry_round::Settings settings;
  registry_round::Round round;
  registry_round::Now now;

  // Configured as (1, 3), or automatic (worker_id -1).
  explicit Worker(int worker_id = 3) {
    settings.datacenter_id = worker_id >= 0 ? 1 : -1;
    settings.worker_id = worker_id;
    settings.node = worker_id >= 0 ? settings.layout.node(1, worker_id) : -1;
    settings.lease_ms = kLeaseMs;
    round = registry_round::begin(settings);
    now.mono_us = 5000000000;
    now.wall_ms = kWallMs;
  }

  Output step(const Event& event) { return registry_round::step(&round, settings, event, now); }
  Output tick() { return step(Event{}); }
  Output event(Event::Kind kind) {
    Event event;
    event.kind = kind;
    return step(event);
  }
  Output answer(const Answer& answer) {
    Event event;
    event.kind = Event::kAnswer;
    event.answer = answer;
    return step(event);
  }
  void pass_us(int64_t us) {
    now.mono_us += us;
    now.wall_ms += us / 1000;
  }

  // The registry's answer to the claim in flight, sent now, from a registry
  // that kept its history (the row as the worker last saw it, renewed now).
  Answer claimed(Answer::Outcome outcome = Answer::kClaimed) const {
    Answer answer;
    answer.outcome = outcome;
    answer.sent_us = now.mono_us;
    answer.ids_before_ms = now.wall_ms + kLeaseMs + 1;
    answer.table = kTable;
    answer.existed = true;
    answer.previous_renewed_at_us =
        round.row_seen.renewed_at_us != 0 ? round.row_seen.renewed_at_us : now.wall_ms * 1000 - 1;
    answer.now_us = now.wall_ms * 1000;
    answer.renewed_at_us = answer.previous_renewed_at_us + 1;
    return answer;
  }
  Answer probed(Answer answer, registry_history::Identity identity) const {
    answer.probed = true;
    answer.registry = identity;
    answer.probe_now_ms = now.wall_ms;
    answer.longest_lease_ms = kLeaseMs;
    return answer;
  }

  // Claimed and held after the first tick.
  void hold() {
    const Output asked = tick();
    ASSERT_EQ(asked.request.kind, Request::kClaim);
    (void)answer(claimed());
    ASSERT_EQ(round.state, State::kHeld);
  }
};

Answer outcome(Answer::Outcome outcome) {
  Answer answer;
  answer.outcome = outcome;
  return answer;
}

Answer picked(int datacenter_id, int worker_id) {
  Answer answer = outcome(Answer::kPicked);
  answer.datacenter_id = datacenter_id;
  answer.worker_id = worker_id;
  return answer;
}

int count(const Output& out, Action action) {
  int n = 0;
  for (int i = 0; i < out.count; i++) n += out.actions[i] == action;
  return n;
}

// The order of two actions in an output.
bool before(const Output& out, Action first, Action second) {
  int a = -1, b = -1;
  for (int i = 0; i < out.count; i++) {
    if (out.actions[i] == first && a < 0) a = i;
    if (out.actions[i] == second && b < 0) b = i;
  }
  return a >= 0 && b >= 0 && a < b;
}

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

// The registry's history (registry_history.hpp): the probe's identity.
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
}  // namespace snowflake
