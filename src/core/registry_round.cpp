// The registry worker's round; registry_round.hpp states it.
#include "registry_round.hpp"

#include <cstdint>

#include "pick.hpp"

namespace snowflake::registry_round {

namespace {

// One step: the round, the settings and the time it runs under, and what it
// asks the worker to do.
class Step {
 public:
  Step(Round& round, const Settings& settings, const Now& now)
      : round_(round), settings_(settings), now_(now) {}

  Output run(const Event& event) {
    switch (event.kind) {
      case Event::kStart:
        retarget();
        break;
      case Event::kReload:
        reload(event);
        break;
      case Event::kTick:
        tick();
        break;
      case Event::kAnswer:
        answer(event.answer);
        break;
      case Event::kShutdown:
        shutdown();
        break;
    }
    out_.wake_at_us = wake_at(event);
    return out_;
  }

 private:
  int64_t lease_us() const { return settings_.lease_ms * 1000; }
  bool held(int datacenter_id, int worker_id) const {
    return round_.state == State::kHeld && round_.datacenter_id == datacenter_id &&
           round_.worker_id == worker_id;
  }

  void act(Action action) {
    if (out_.count < Output::kMaxActions) out_.actions[out_.count++] = action;
  }

  // When the worker steps again of its own accord.
  int64_t wake_at(const Event& event) const {
    if (event.kind == Event::kShutdown) return -1;         // the worker ends
    if (round_.request.kind != Request::kNone) return -1;  // at the answer
    switch (round_.state) {
      case State::kDisabled:
      case State::kUnconfigured:
        return -1;  // at a reload
      case State::kStandby:
        return now_.mono_us + kRecoveryPollUs;
      default:
        return round_.next_attempt_us;
    }
  }

  // The View emptied into `state`, for the identity settings in force; the
  // registry's history and the worker's own memory stay.
  void reset(State state) {
    round_.state = state;
    round_.target_datacenter_id = settings_.datacenter_id;
    round_.target_worker_id = settings_.worker_id;
    round_.datacenter_id = -1;
    round_.worker_id = -1;
    round_.node = -1;
    round_.valid_until_us = 0;
    round_.ids_before = 0;
    round_.floor = 0;
    round_.gap_from = 0;
    round_.gap_until = 0;
    round_.lease_ms = 0;
    round_.renewed_at_us = 0;
    act(Action::kReset);
  }

  void set_state(State state) {
    if (round_.state == state) return;
    reset(state);
    round_.next_attempt_us = 0;
    act(Action::kPublish);
  }

  // No lease from now on (the identity is kept for the status).
  void drop_lease(State state) {
    round_.state = state;
    round_.node = -1;
    round_.valid_until_us = 0;
  }

  // The identity settings changed (or the worker started): what was claimed
  // for the old ones is forgotten; its lease simply expires in the registry.
  void retarget() {
    if (round_.target_datacenter_id == settings_.datacenter_id &&
        round_.target_worker_id == settings_.worker_id)
      return;
    reset(settings_.registry_configured ? State::kStarting : State::kDisabled);
    round_.next_attempt_us = 0;
    act(Action::kPublish);
  }

  // Another registry, or none: what the probes found of the last one no longer
  // applies, nor the rows seen. What the node remembers of its history stays:
  // the next registry is compared with it.
  void forget_registry() {
    act(Action::kForgetRegistry);
    round_.row_seen = RowSeen{};
    round_.next_probe_us = 0;
  }

  void reload(const Event& event) {
    if (event.registry_changed) forget_registry();
    if (event.connection_elsewhere) {
      act(Action::kDisconnect);
      round_.next_attempt_us = 0;
    }
    if (event.lease_changed) round_.next_attempt_us = 0;
    retarget();
  }

  void tick() {
    if (round_.request.kind != Request::kNone) return;
    if (!settings_.registry_configured) {
      if (now_.connected) act(Action::kDisconnect);
      if (round_.state != State::kDisabled) forget_registry();
      set_state(State::kDisabled);
    } else if (settings_.in_recovery) {
      if (now_.connected) act(Action::kDisconnect);
      set_state(State::kStandby);
    } else if (settings_.worker_id >= 0 && settings_.node < 0) {
      set_state(State::kUnconfigured);
    } else {
      const State state = round_.state;
      if (state == State::kDisabled || state == State::kStandby || state == State::kUnconfigured ||
          state == State::kReleased)
        set_state(State::kStarting);
      if (now_.mono_us >= round_.next_attempt_us) attempt();
    }
  }

  // A round with the registry: the configured identity claimed or renewed;
  // automatic, the identity held renewed, else a pick.
  void attempt() {
    round_.claims_lost = 0;
    if (settings_.worker_id >= 0)
      claim(settings_.datacenter_id > 0 ? settings_.datacenter_id : 0, settings_.worker_id, false);
    else if (round_.state == State::kHeld)
      claim(round_.datacenter_id, round_.worker_id, false);
    else
      pick();
  }

  // A request, after the probe at a new connection or when it is due.
  void ask(Request request) {
    request.probe = !now_.connected || now_.mono_us >= round_.next_probe_us;
    if (request.probe) round_.next_probe_us = now_.mono_us + probe_interval_us(settings_.lease_ms);
    round_.request = request;
    out_.request = request;
  }

  // A claim, or the renewal of the lease held on the identity (with its cap).
  void claim(int datacenter_id, int worker_id, bool after_pick) {
    Request request;
    request.kind = Request::kClaim;
    request.datacenter_id = datacenter_id;
    request.worker_id = worker_id;
    request.cap_ms =
        held(datacenter_id, worker_id) ? lease::cap_ms(settings_.layout, round_.ids_before) : 0;
    request.after_pick = after_pick;
    ask(request);
  }

  void pick() {
    Request request;
    request.kind = Request::kPick;
    ask(request);
  }

  void answer(const Answer& answer) {
    const Request request = round_.request;
    if (request.kind != Request::kClaim && request.kind != Request::kPick) return;
    round_.request = Request{};
    if (answer.probed) probed(answer);
    const bool configured = settings_.worker_id >= 0;
    switch (answer.outcome) {
      case Answer::kFailed:
        act(Action::kDisconnect);
        failure(Output::kRequestFailed);
        act(Action::kPublish);
        break;
      case Answer::kClaimed:
        check_claim(request, answer);
        claimed(request, answer);
        act(Action::kPublish);
        break;
      case Answer::kTaken:
        check_claim(request, answer);
        if (configured) {
          conflict(request);
          act(Action::kPublish);
        } else {
          lost(request);
        }
        break;
      case Answer::kRace:
        if (configured)
          round_.next_attempt_us = now_.mono_us + kRaceRetryUs;
        else
          lost(request);
        break;
      case Answer::kPicked:
        claim(answer.datacenter_id, answer.worker_id, true);
        break;
      case Answer::kNoneFree:
        drop_lease(State::kExhausted);
        round_.next_attempt_us = lease::retry_at_us(now_.mono_us, lease_us());
        act(Action::kPublish);
        break;
    }
  }

  // A failed request, or the claims lost in a row: a lease held stays held
  // until it runs out; tried again soon. Cut short by a shutdown, none.
  void failure(Output::Failure failure) {
    if (settings_.shutting_down) return;
    if (round_.state != State::kHeld) drop_lease(State::kUnreachable);
    out_.failure = failure;
    out_.failure_log = !round_.failure_logged;
    round_.failure_logged = true;
    act(Action::kFailure);
    round_.next_attempt_us = lease::retry_at_us(now_.mono_us, lease_us());
  }

  // Automatic leasing: a claim another node won. A lease held on that
  // identity is given up at once; then another pick, up to kPickAttempts
  // claims in the round.
  void lost(const Request& request) {
    if (held(request.datacenter_id, request.worker_id)) {
      drop_lease(State::kStarting);
      act(Action::kPublish);
    }
    if (++round_.claims_lost < automatic::kPickAttempts) {
      pick();
      return;
    }
    failure(Output::kPicksLost);
    act(Action::kPublish);
  }

  void conflict(const Request& request) {
    round_.state = State::kConflict;
    round_.datacenter_id = request.datacenter_id;
    round_.worker_id = request.worker_id;
    round_.node = -1;
    round_.valid_until_us = 0;
    act(Action::kRecordConflict);
    round_.next_attempt_us = lease::retry_at_us(now_.mono_us, lease_us());
  }

  // An accepted claim or renewal: the floor first (the generator raised to
  // it before the lease is published), then the lease.
  void claimed(const Request& request, const Answer& answer) {
    const Layout& layout = settings_.layout;
    const bool same_lease = held(request.datacenter_id, request.worker_id);
    const bool renewal = same_lease && !answer.taken;
    FloorFrom from = answer.taken ? FloorFrom::kPreviousHolder
                     : same_lease ? FloorFrom::kKept
                                  : FloorFrom::kNone;
    // After the registry's history changed, anything but a renewal starts
    // above what a holder whose renewals it forgot may issue; a renewal keeps
    // the gap (registry_history.hpp).
    int64_t floor_ms = answer.inherited_ms;
    const int64_t history_floor_ms =
        registry_history::claim_floor_ms(round_.history, floor_ms, renewal);
    if (history_floor_ms > floor_ms) {
      floor_ms = history_floor_ms;
      if (floor_ms > now_.wall_ms) {
        out_.floor_ms = floor_ms;
        act(Action::kClaimAboveFloor);
        if (!answer.taken) from = FloorFrom::kForgottenHolder;
      }
    }
    out_.floor_from = from;
    act(Action::kRecordHeld);
    const int64_t floor = lease::floor_from_inherited(layout, floor_ms);
    if (floor > 0) {
      out_.floor = floor;
      out_.floor_ms = floor_ms;
      out_.floor_log = now_.last_id < layout.max_id(floor - 1) && floor_ms > now_.wall_ms;
      act(Action::kRaiseFloor);
    }
    round_.floor = lease::floor_after_claim(round_.floor, renewal, floor);
    if (!renewal) {
      round_.gap_from = 0;  // lease::gap_after_claim: the floor covers it
      round_.gap_until = 0;
    }
    round_.state = State::kHeld;
    round_.datacenter_id = request.datacenter_id;
    round_.worker_id = request.worker_id;
    round_.node = layout.node(request.datacenter_id, request.worker_id);
    round_.lease_ms = settings_.lease_ms;
    round_.valid_until_us = lease::valid_until_us(answer.sent_us, lease_us());
    round_.ids_before = lease::cap_from_ids_before(layout, answer.ids_before_ms);
    round_.renewed_at_us = answer.renewed_at_us;
    if (round_.failure_logged) {
      act(Action::kReachedAgain);
      round_.failure_logged = false;
    }
    round_.next_attempt_us = lease::renew_at_us(answer.sent_us, lease_us());
  }

  // A change of the registry's history seen at its `now_ms`: the floor, and
  // the gap of a lease held.
  void saw_change(int64_t now_ms, HistoryChange change) {
    registry_history::Memory& memory = round_.history;
    registry_history::seen_change(&memory, now_ms, settings_.lease_ms, settings_.max_lead_ms);
    change.floor_ms = memory.floor_ms;
    if (round_.state == State::kHeld) {
      const Layout& layout = settings_.layout;
      lease::Grant held_grant = grant(round_);
      lease::gap_after_change(&held_grant, layout.timestamp_from_unix_ms(memory.floor_ms),
                              layout.timestamp_of(now_.last_id));
      round_.gap_from = held_grant.gap_from;
      round_.gap_until = held_grant.gap_until;
      change.held_datacenter_id = round_.datacenter_id;
      change.held_worker_id = round_.worker_id;
      change.gap_from = round_.gap_from;
      change.gap_until = round_.gap_until;
    }
    if (out_.change_count < 2) out_.changes[out_.change_count++] = change;
    act(Action::kHistoryChanged);
  }

  // The probe: the registry's identity against what the node remembers.
  void probed(const Answer& answer) {
    registry_history::Memory& memory = round_.history;
    HistoryChange change;
    change.before = memory.identity;
    const unsigned changed = registry_history::compare(memory.identity, answer.registry);
    memory.identity = registry_history::merge(memory.identity, answer.registry);
    change.after = memory.identity;
    if (changed != 0) {
      saw_change(answer.probe_now_ms, change);
    } else if (round_.history_unreadable) {
      change.what = HistoryChange::kUnreadable;
      saw_change(answer.probe_now_ms, change);
    }
    round_.history_unreadable = false;
    registry_history::seen_lease(&memory, answer.longest_lease_ms);
  }

  // A claim's answer: the table's OID, and the row before the statement
  // against what this worker last saw of it (in the same table).
  void check_claim(const Request& request, const Answer& answer) {
    registry_history::Memory& memory = round_.history;
    RowSeen& seen = round_.row_seen;
    HistoryChange change;
    change.before = memory.identity;
    const unsigned changed =
        registry_history::compare(memory.identity, registry_history::Identity{0, 0, answer.table});
    memory.identity =
        registry_history::merge(memory.identity, registry_history::Identity{0, 0, answer.table});
    change.after = memory.identity;
    change.datacenter_id = request.datacenter_id;
    change.worker_id = request.worker_id;
    change.seen_renewed_at_us = seen.renewed_at_us;
    change.previous_renewed_at_us = answer.previous_renewed_at_us;
    const bool same_row = seen.datacenter_id == request.datacenter_id &&
                          seen.worker_id == request.worker_id && seen.table == answer.table;
    const unsigned row = registry_history::row_change(
        same_row ? seen.renewed_at_us : 0,
        registry_history::RowBefore{answer.existed, answer.previous_renewed_at_us});
    const int64_t now_ms = answer.now_us / 1000;
    if (changed != 0) {
      saw_change(now_ms, change);
    } else if (row & registry_history::kRowGone) {
      change.what = HistoryChange::kRowGone;
      saw_change(now_ms, change);
    } else if (row & registry_history::kRowOlder) {
      change.what = HistoryChange::kRowOlder;
      saw_change(now_ms, change);
    }
    seen.datacenter_id = request.datacenter_id;
    seen.worker_id = request.worker_id;
    seen.table = answer.table;
    seen.renewed_at_us = answer.renewed_at_us == INT64_MAX ? 0 : answer.renewed_at_us;
  }

  // A clean shutdown: "released" published before the release is sent.
  void shutdown() {
    if (round_.state != State::kHeld || !settings_.registry_configured) return;
    drop_lease(State::kReleased);
    act(Action::kPublish);
    out_.request.kind = Request::kRelease;
    out_.request.datacenter_id = round_.datacenter_id;
    out_.request.worker_id = round_.worker_id;
    out_.request.renewed_at_us = round_.renewed_at_us;
  }

  Round& round_;
  const Settings& settings_;
  const Now& now_;
  Output out_;
};

}  // namespace

Round begin(const Settings& settings) noexcept {
  Round round;
  round.state = settings.registry_configured ? State::kStarting : State::kDisabled;
  round.target_datacenter_id = settings.datacenter_id;
  round.target_worker_id = settings.worker_id;
  return round;
}

lease::Grant grant(const Round& round) noexcept {
  return lease::Grant{round.state == State::kHeld,
                      round.node,
                      round.valid_until_us,
                      round.ids_before,
                      round.floor,
                      round.gap_from,
                      round.gap_until};
}

bool Output::has(Action action) const noexcept {
  for (int i = 0; i < count; i++)
    if (actions[i] == action) return true;
  return false;
}

Output step(Round* round, const Settings& settings, const Event& event, const Now& now) noexcept {
  return Step(*round, settings, now).run(event);
}

}  // namespace snowflake::registry_round
