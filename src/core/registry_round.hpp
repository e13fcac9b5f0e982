// The registry worker's round, without PostgreSQL: every decision of the
// "snowflake registry" background worker, as one function of its state, an
// event and the time (step). The worker (src/pg/registry/worker.cpp) turns its
// settings, its clocks and the registry's answers into events, and the
// actions step returns into statements, shared memory and log lines; the
// deterministic simulator (test/simulation/) runs the same function, with the
// time, the network and the registry its own.
//
// The states (State; the View publishes them, snowflake_registry_status shows
// them): disabled (no registry), standby (in recovery: nothing claimed; it
// looks every 500 ms whether it has been promoted), unconfigured (worker_id
// set, datacenter_id not), starting (no answer yet for the identity settings
// in force), held, conflict (another live node holds the configured identity),
// unreachable (no lease, and the last request failed), exhausted (automatic
// leasing found no free identity), released (shutting down). A change of the
// identity settings forgets what was claimed for the old ones (its lease
// simply expires in the registry).
//
// The round. When its time comes (at once after a start, a change of state or
// a reload that asks for it) the worker claims its configured identity, or,
// without a worker_id, renews the identity it holds, else picks one
// (src/core/pick.hpp) and claims it. A claim's answer: claimed (held: the
// lease, its cap and floor below; the next renewal a third of a lease after
// the claim was sent), taken (configured: conflict, tried again after a
// second; automatic: a lease held on that identity is given up at once, and
// the worker picks again), a race lost to another node's insert (configured:
// tried again after 50 ms; automatic: as taken), or failed (a lease held stays
// held until it runs out; else unreachable; tried again after a second at
// most, lease::retry_at_us). Automatic leasing loses at most
// automatic::kPickAttempts claims in a row, then tries again later; a pick
// that finds every identity leased is exhausted. Each request may be preceded
// by the probe of what the registry can lose (src/pg/registry/durability.cpp)
// and of its history: at every new connection, then every lease, at most once
// a minute. A request gives up after a quarter of the lease, at most 10 s
// (request_timeout_ms).
//
// The rule that keeps two nodes apart. A node issues IDs only while its
// monotonic clock (CLOCK_BOOTTIME: it counts suspended time too) reads less
// than
//     valid_until = (that clock's time the last accepted renewal was sent)
//                   + lease - lease / 10
// The registry set that renewal's expires_at to (its now() when it processed
// the request, so after it was sent) + lease, and no other node can claim the
// row before expires_at has passed on the registry's clock. So the node stops
// at least lease / 10 before anyone else may start, as long as the two clocks
// run at the same rate; whether the registry is reachable in between does not
// matter. Renewals go out every lease / 3 and are retried every second (at
// most) after a failure, each before lease / 4 has passed. The claim's answer
// sets valid_until (lease::valid_until_us); src/pg/registry/lease.cpp refuses
// IDs past it. The takeover's floor and the cap (ids_before) are
// src/pg/registry/claim.cpp's rule; an answer that hands a floor over raises
// the generator to it before the lease is published.
//
// Release. On a clean shutdown the worker publishes "released" (no backend
// returns another ID: each reads the View after its reservation, with a full
// barrier between), then reads last_id, and sets the row's ids_before to 1 ms
// above that ID's timestamp (lease::release_ids_before_ms) and marks it
// released (a second at most a step), if the row is still this postmaster's
// as the last renewal the worker saw left it (a release that reaches the
// registry late, after a restart's claim, changes nothing). A standby promoted
// in a planned switchover, or this node restarted (a new postmaster, so a new
// token), then takes the row at once and finds a floor already past. The
// lease is left to run, so other nodes (another system identifier, or the
// same timeline elsewhere) still wait for it.
//
// The registry's history (src/core/registry_history.hpp states the rules). The
// probe's identity and every claim's table and row are compared with what the
// node remembers: a change raises the floor of every claim that is not a
// renewal, and a lease held skips the gap above its cap.
#pragma once

#include <cstdint>

#include "layout.hpp"
#include "lease.hpp"
#include "registry_history.hpp"

namespace snowflake::registry_round {

// A claim that lost a race with another node's insert is tried again this soon.
inline constexpr int64_t kRaceRetryUs = 50 * 1000;
// How often a standby looks whether it has been promoted.
inline constexpr int64_t kRecoveryPollUs = 500 * 1000;

// How long connecting and each request may take, in ms (also the registry's
// statement_timeout): a quarter of the lease, at most 10 s, so that a renewal
// sent a third into the lease has failed or succeeded long before the node
// must stop (0.9 of it).
inline int64_t request_timeout_ms(int64_t lease_ms) noexcept {
  return lease_ms / 4 < 10000 ? lease_ms / 4 : 10000;
}

// How often a connected worker probes the registry again: every lease, at
// most once a minute (and at every new connection).
inline int64_t probe_interval_us(int64_t lease_ms) noexcept {
  constexpr int64_t kLongestUs = 60 * 1000 * 1000;
  return lease_ms * 1000 < kLongestUs ? lease_ms * 1000 : kLongestUs;
}

enum class State : int32_t {
  kDisabled,      // no registry configured
  kStarting,      // no answer yet for the current identity settings
  kStandby,       // in recovery: nothing claimed
  kUnconfigured,  // worker_id set, datacenter_id not
  kHeld,          // leased; IDs may be issued while the lease clock < valid_until_us
  kConflict,      // another live node holds the configured identity
  kUnreachable,   // no lease, and the last attempt failed
  kExhausted,     // automatic leasing found no free identity
  kReleased,      // shutting down: issues nothing, told the registry its last ID
};

// The settings and conditions in force when an event happens.
struct Settings {
  Layout layout;
  bool registry_configured = true;
  bool in_recovery = false;
  // A shutdown was asked for: a request it cut short is no failure (the
  // release follows).
  bool shutting_down = false;
  int datacenter_id = -1;  // snowflake.datacenter_id (-1: unset)
  int worker_id = -1;      // snowflake.worker_id (-1: automatic leasing)
  int64_t node = -1;       // the node field of both (-1: not both set)
  int64_t lease_ms = 30000;
  int64_t max_lead_ms = 0;
};

// The clocks, the generator and the connection when an event happens.
struct Now {
  int64_t mono_us = 0;     // the lease clock (CLOCK_BOOTTIME), µs
  int64_t wall_ms = 0;     // the wall clock, ms since 1970
  int64_t last_id = 0;     // the generator's last ID
  bool connected = false;  // a connection to the registry is open
};

// What the worker asks the registry (Output::request).
struct Request {
  enum Kind : uint8_t { kNone, kClaim, kPick, kRelease };
  Kind kind = kNone;
  // Probe the registry first (durability and history: Answer::probe).
  bool probe = false;
  int datacenter_id = -1;  // kClaim, kRelease
  int worker_id = -1;
  // kClaim: the cap of the lease it renews (ms since 1970; 0: a new claim),
  // below which the ids_before it reports never goes (lease::ids_before_to_report,
  // with the wall clock and the last ID when it is sent).
  int64_t cap_ms = 0;
  bool after_pick = false;  // kClaim: of the identity a pick gave
  // kRelease: the registry's renewed_at (µs since 1970) of the last renewal
  // accepted; the ids_before it reports is lease::release_ids_before_ms of
  // the last ID read after the View said released.
  int64_t renewed_at_us = 0;
};

// What the registry answered to a request (or the host, when it failed).
struct Answer {
  enum Outcome : uint8_t { kClaimed, kTaken, kRace, kPicked, kNoneFree, kFailed };
  Outcome outcome = kFailed;
  // The probe, when the request asked for it and it succeeded (also when the
  // request then failed): the registry's identity (0: unknown parts), its
  // clock, the longest lease of its rows (0: none).
  bool probed = false;
  registry_history::Identity registry;
  int64_t probe_now_ms = 0;
  int64_t longest_lease_ms = 0;
  // kClaimed and kTaken: the claim statement's answer.
  int64_t sent_us = 0;                 // the lease clock when it was sent
  int64_t inherited_ms = -1;           // the floor handed over (ms since 1970; < 0: none)
  int64_t ids_before_ms = -1;          // the row's ids_before once claimed
  bool taken = false;                  // claimed from another holder
  int64_t table = 0;                   // the registry table's OID
  bool existed = false;                // the row existed before the statement
  int64_t previous_renewed_at_us = 0;  // its renewed_at then (µs since 1970; INT64_MAX: infinite)
  int64_t now_us = 0;                  // the registry's now()
  int64_t renewed_at_us = 0;           // the row's renewed_at now (INT64_MAX: infinite)
  // kPicked: the identity picked.
  int datacenter_id = -1;
  int worker_id = -1;
};

struct Event {
  enum Kind : uint8_t {
    kStart,     // the worker started (its View restored from shared memory)
    kReload,    // the configuration was reloaded
    kTick,      // the loop's turn: its time came, or something woke it
    kAnswer,    // the request asked for answered, or failed
    kShutdown,  // a clean shutdown: the release
  };
  Kind kind = kTick;
  // kReload: snowflake.registry changed (what the probes found no longer
  // applies); the open connection is to another one than it names now; the
  // lease changed.
  bool registry_changed = false;
  bool connection_elsewhere = false;
  bool lease_changed = false;
  Answer answer;  // kAnswer
};

// What the worker remembers of the row it claims (a change of history is a
// row gone or older than seen; registry_history::row_change).
struct RowSeen {
  int datacenter_id = -1;
  int worker_id = -1;
  int64_t table = 0;
  int64_t renewed_at_us = 0;  // 0: nothing (or an infinite renewed_at)
};

// The worker's state. The first part is what it publishes (the View); the
// View outlives a restart of the worker, which restores that part from it.
struct Round {
  State state = State::kStarting;
  int target_datacenter_id = -1;  // the identity settings acted on
  int target_worker_id = -1;
  int datacenter_id = -1;  // of the lease held, or the one in conflict
  int worker_id = -1;
  int64_t node = -1;           // leased (kHeld), else -1
  int64_t valid_until_us = 0;  // on the lease clock (kHeld)
  int64_t ids_before = 0;      // the cap, a timestamp of the layout
  int64_t floor = 0;           // inherited at the last takeover (0: none)
  int64_t gap_from = 0;        // after a change of history seen while held
  int64_t gap_until = 0;
  int64_t lease_ms = 0;              // of the lease held
  int64_t renewed_at_us = 0;         // the registry's, of the last accepted claim
  registry_history::Memory history;  // pg_snowflake/registry
  bool history_unreadable = false;   // that file could not be read: a change at the first probe
  // The worker's own.
  int64_t next_attempt_us = 0;
  int64_t next_probe_us = 0;
  Request request;              // in flight (kind kNone: none)
  int claims_lost = 0;          // in this round, automatic (kPickAttempts)
  bool failure_logged = false;  // since the last success
  RowSeen row_seen;
};

// The round as shared memory starts it: starting (or disabled without a
// registry) for the identity settings in force.
Round begin(const Settings& settings) noexcept;

// What the backends check (src/core/lease.hpp).
lease::Grant grant(const Round& round) noexcept;

// A change of the registry's history that step saw (registry_history.hpp).
struct HistoryChange {
  enum What : uint8_t {
    kIdentity,    // its system identifier, timeline or table OID: before, after
    kUnreadable,  // this node's record of it could not be read: after
    kRowGone,     // the row of (datacenter_id, worker_id), seen renewed at seen_renewed_at_us
    kRowOlder,    // ... last renewed at previous_renewed_at_us
  };
  What what = kIdentity;
  registry_history::Identity before;
  registry_history::Identity after;
  int datacenter_id = -1;
  int worker_id = -1;
  int64_t seen_renewed_at_us = 0;
  int64_t previous_renewed_at_us = 0;
  int64_t floor_ms = 0;  // the floor since (ms since 1970)
  // A lease held then: its identity and its gap (timestamps of the layout;
  // 0, 0: none).
  int held_datacenter_id = -1;
  int held_worker_id = -1;
  int64_t gap_from = 0;
  int64_t gap_until = 0;
};

enum class Action : uint8_t {
  kForgetRegistry,   // what the probes found of the registry no longer applies
  kDisconnect,       // close the connection to the registry
  kReset,            // the View emptied for the new state and identity settings
  kHistoryChanged,   // a WARNING: Output::changes, the floor and gap in the round
  kClaimAboveFloor,  // a LOG: this claim starts above the history's floor
  kRaiseFloor,       // the generator's floor to Output::floor, before the lease is published
  kRecordHeld,       // the answer's row is the lease's (Output::floor_from: whom the floor is from)
  kRecordConflict,   // the answer's row is the holder's that refuses this node
  kFailure,          // Output::failure; a LOG if Output::failure_log
  kReachedAgain,     // a LOG: the registry answers again after a failure was logged
  kPublish,          // write the View
};

// Whom the floor of the lease held comes from, for the errors that name it.
enum class FloorFrom : uint8_t {
  kKept,             // a renewal: as before
  kNone,             // nobody
  kPreviousHolder,   // the holder the claim took the row from
  kForgottenHolder,  // a holder the registry may have forgotten (the history's floor)
};

struct Output {
  static constexpr int kMaxActions = 12;
  Action actions[kMaxActions] = {};
  int count = 0;
  Request request;          // to run next (kind kNone: none); its answer is the next event
  int64_t wake_at_us = -1;  // step again (a tick) at this lease clock time (-1: no need)
  // The actions' data.
  HistoryChange changes[2];
  int change_count = 0;
  int64_t floor = 0;       // kRaiseFloor: a timestamp of the layout
  int64_t floor_ms = 0;    // kRaiseFloor, kClaimAboveFloor: what it came from (ms since 1970)
  bool floor_log = false;  // kRaiseFloor: the generator is raised ahead of the clock
  FloorFrom floor_from = FloorFrom::kKept;
  enum Failure : uint8_t { kRequestFailed, kPicksLost };
  Failure failure = kRequestFailed;  // kPicksLost: other nodes took kPickAttempts identities first
  bool failure_log = false;
  bool has(Action action) const noexcept;
};

// The round's one step: the event at `now` under `settings`, applied to
// `round`; what the worker does about it, in order.
Output step(Round* round, const Settings& settings, const Event& event, const Now& now) noexcept;

}  // namespace snowflake::registry_round
