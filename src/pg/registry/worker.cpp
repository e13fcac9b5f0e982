// The background worker "snowflake registry": its loop and state machine. One
// per node, started at consistent state (so also on a standby, where it waits
// for the promotion); it claims or renews this node's identity (claim.cpp)
// through its libpq client (client.cpp) and publishes the outcome in the View
// (view.cpp), which backends read (lease.cpp). Every wait is on its latch with
// a deadline, so shutdown and reloads are never held up for long.
//
// Interrupts. The worker is a backend without a database (it has a PGPROC and
// a ProcSignal slot), so every operation that waits for all backends to
// absorb a ProcSignalBarrier (DROP DATABASE, ALTER DATABASE ... SET
// TABLESPACE, DROP TABLESPACE, CREATE DATABASE ... STRATEGY FILE_COPY)
// waits for it too. After every wait (its latch here, its socket in
// client.cpp) it serves them as CHECK_FOR_INTERRUPTS() serves a backend's:
// barriers are absorbed, memory contexts logged on request; a query cancel
// (pg_cancel_backend) ends the registry request in flight, which then counts
// as a failed attempt and is retried. SIGHUP reloads the configuration
// between rounds. SIGTERM asks for a clean shutdown rather than an immediate
// exit (PostgreSQL's auxiliary processes do the same), because the worker
// gives its lease back first (see "Release"): at most a second a step.
//
// The rule that keeps two nodes apart. A node issues IDs only while its
// monotonic clock (CLOCK_BOOTTIME: it counts suspended time too) reads less than
//     valid_until = (that clock's time the last accepted renewal was sent)
//                   + lease - lease / 10
// The registry set that renewal's expires_at to (its now() when it processed
// the request, so after it was sent) + lease, and no other node can claim the
// row before expires_at has passed on the registry's clock. So the node stops
// at least lease / 10 before anyone else may start, as long as the two clocks
// run at the same rate; whether the registry is reachable in between does not
// matter. Renewals go out every lease / 3 and are retried every second (at
// most) after a failure; each request times out after lease / 4 (at most
// 10 s). record_claim() sets valid_until; lease.cpp refuses IDs past it.
//
// Release. On a clean shutdown (SIGTERM) the worker publishes "released" (no
// backend returns another ID: each reads the View after its reservation, with
// a full barrier between), then reads last_id, and sets the row's ids_before
// to 1 ms above that ID's timestamp and marks it released (a second at most
// a step: connecting if it must, then each statement), if the row is still
// this postmaster's as the last renewal the
// worker saw left it (a release that reaches the registry late, after a
// restart's claim, changes nothing). A standby promoted in a planned
// switchover, or this node restarted (a new postmaster, so a new token), then
// takes the row at once and finds a floor already past. The lease is left to
// run, so other nodes (another system identifier, or the same timeline
// elsewhere) still wait for it.
//
// Durability. The worker also asks the registry, at every connection and then
// every lease, what it can lose of what it acknowledged, and warns when a
// failover of it may lose claims and renewals (durability.cpp). It compares
// the registry's identity and the rows it answers with what the node
// remembers (history.cpp); after a change of the registry's history, a claim
// that is not a renewal starts above a floor (record_claim), and a lease held
// skips the gap above its cap (src/core/registry_history.hpp states why).
#include <algorithm>

#include "../../core/clock.hpp"
#include "../../core/lease.hpp"
#include "../../core/pick.hpp"
#include "../bound/bound_check.hpp"
#include "../bound/bound_register.hpp"
#include "../bound/durable.hpp"
#include "../layout_end.hpp"
#include "../library.hpp"
#include "../node.hpp"
#include "../settings.hpp"
#include "../time.hpp"
#include "claim.hpp"
#include "client.hpp"
#include "durability.hpp"
#include "history.hpp"
#include "registry.hpp"
#include "stall.hpp"
#include "view.hpp"

extern "C" {
#include "postmaster/bgworker.h"
#include "postmaster/bgworker_internals.h"
#include "postmaster/interrupt.h"
}

namespace snowflake::pg {

using namespace registry;

namespace {

// How often a standby looks whether it has been promoted.
constexpr int64_t kRecoveryPollMs = 500;
// A claim that lost a race with another node's insert is tried again this soon.
constexpr int64_t kRaceRetryUs = 50 * 1000;

struct Worker {
  View view;
  int64_t next_attempt_us;
  State logged;           // the last state written to the server log
  int64 logged_node;      // and its identity
  bool logged_failure;    // a failure was logged since the last success
  int64_t next_probe_us;  // when to ask the registry what it can lose again
};

Worker worker;

// Whether the postmaster took the worker's registration (copied into every
// process it starts).
bool registered_worker = false;

int64_t lease_us() {
  return int64_t{settings.registry_lease_ms} * 1000;
}

void log_state() {
  const View& view = worker.view;
  if (view.state == worker.logged && view.node == worker.logged_node) return;
  worker.logged = view.state;
  worker.logged_node = view.node;
  switch (view.state) {
    case State::kHeld:
      ereport(LOG, (errmsg("snowflake registry: holding datacenter_id %d, worker_id %d",
                           view.datacenter_id, view.worker_id),
                    errdetail("Lease of %d ms, claimed at %s (registry clock).", view.lease_ms,
                              registry_time(view.mine.claimed_at))));
      break;
    case State::kConflict:
      ereport(LOG, (errmsg("snowflake registry: datacenter_id %d, worker_id %d is held by %s "
                           "(data directory %s, system identifier %s) since %s",
                           view.datacenter_id, view.worker_id, view.other.host,
                           view.other.data_directory, view.other.system_identifier,
                           registry_time(view.other.claimed_at))));
      break;
    case State::kExhausted:
      ereport(LOG, (errmsg("snowflake registry: no free identity")));
      break;
    default:
      break;
  }
}

void publish() {
  write_view(worker.view);
  log_state();
}

void record_failure(const char* error) {
  if (ShutdownRequestPending) return;
  View& view = worker.view;
  view.error_at = GetCurrentTimestamp();
  strlcpy(view.error, error, sizeof(view.error));
  if (view.state != State::kHeld) {
    view.state = State::kUnreachable;
    view.node = -1;
    view.valid_until_us = 0;
  }
  if (!worker.logged_failure) {
    ereport(LOG, (errmsg("snowflake registry: %s", error),
                  view.state == State::kHeld
                      ? errdetail(
                            "The lease stays valid for %lld ms more.",
                            static_cast<long long>((view.valid_until_us - lease_clock_us()) / 1000))
                      : 0));
    worker.logged_failure = true;
  }
  worker.next_attempt_us = lease::retry_at_us(lease_clock_us(), lease_us());
}

void record_claim(const Self& self, int datacenter_id, int worker_id, const ClaimResult& claimed) {
  View& view = worker.view;
  const bool same_lease = view.state == State::kHeld && view.datacenter_id == datacenter_id &&
                          view.worker_id == worker_id;
  if (!same_lease) view.floor_host[0] = '\0';
  // After the registry's history changed, anything but a renewal starts above
  // what a holder whose renewals it forgot may issue; a renewal keeps the gap
  // (src/core/registry_history.hpp; history.cpp).
  ClaimResult result = claimed;
  const bool renewal = same_lease && claimed.taken_from[0] == '\0';
  const int64_t history_floor =
      registry_history::claim_floor_ms(view.registry.history, result.inherited_ms, renewal);
  if (history_floor > result.inherited_ms) {
    result.inherited_ms = history_floor;
    if (result.inherited_ms > unix_time_ms()) {
      // Whom this node's IDs wait for (explain_clock_behind names it).
      if (result.taken_from[0] == '\0')
        strlcpy(result.taken_from, "a holder the registry may have forgotten",
                sizeof(result.taken_from));
      ereport(LOG, (errmsg("snowflake registry: claiming datacenter_id %d, worker_id %d above %s, "
                           "as the registry's history changed at %s",
                           datacenter_id, worker_id,
                           timestamp_text(timestamptz_from_unix_ms(result.inherited_ms)),
                           registry_time(view.registry.history_changed_at))));
    }
  }
  apply_inherited(result, same_lease, &view);
  if (!renewal) {
    view.gap_from = 0;  // lease::gap_after_claim: the floor covers it
    view.gap_until = 0;
  }
  view.state = State::kHeld;
  view.datacenter_id = datacenter_id;
  view.worker_id = worker_id;
  view.node = settings.layout.node(datacenter_id, worker_id);
  view.lease_ms = settings.registry_lease_ms;
  view.valid_until_us = lease::valid_until_us(result.sent_us, lease_us());
  view.ids_before = settings.layout.timestamp_from_unix_ms(result.ids_before_ms);
  view.mine = result.row;
  strlcpy(view.mine.system_identifier, self.system_identifier, sizeof(view.mine.system_identifier));
  view.error[0] = '\0';
  view.error_at = 0;
  if (worker.logged_failure) {
    ereport(LOG, (errmsg("snowflake registry: reached the registry again")));
    worker.logged_failure = false;
  }
  worker.next_attempt_us = lease::renew_at_us(result.sent_us, lease_us());
}

void record_conflict(const Self& self, int datacenter_id, int worker_id,
                     const ClaimResult& result) {
  View& view = worker.view;
  view.state = State::kConflict;
  view.datacenter_id = datacenter_id;
  view.worker_id = worker_id;
  view.node = -1;
  view.valid_until_us = 0;
  view.other = result.row;
  strlcpy(view.mine.system_identifier, self.system_identifier, sizeof(view.mine.system_identifier));
  view.mine.timeline = self.timeline;
  strlcpy(view.mine.host, self.host, sizeof(view.mine.host));
  strlcpy(view.mine.data_directory, self.data_directory, sizeof(view.mine.data_directory));
  worker.next_attempt_us = lease::retry_at_us(lease_clock_us(), lease_us());
}

// The cap of the lease held on (datacenter_id, worker_id), in ms since 1970,
// which a renewal's ids_before never goes below; 0 for a new claim.
int64_t cap_of(int datacenter_id, int worker_id) {
  const View& view = worker.view;
  if (view.state != State::kHeld || view.datacenter_id != datacenter_id ||
      view.worker_id != worker_id)
    return 0;
  return lease::cap_ms(settings.layout, view.ids_before);
}

// One round with the registry: claim or renew, and publish the outcome.
void attempt() {
  char error[kErrorSize];
  Self self;
  describe_self(&self);
  const bool new_connection = !connected();
  if (new_connection && !connect_registry(error)) {
    record_failure(error);
    publish();
    return;
  }
  // What the registry can lose (durability.cpp): at every connection, then
  // every lease at most once a minute.
  if (new_connection || lease_clock_us() >= worker.next_probe_us) {
    if (!probe_durability(&worker.view.registry, error) || !probe_history(&worker.view, error)) {
      disconnect();
      record_failure(error);
      publish();
      return;
    }
    worker.next_probe_us = lease_clock_us() + probe_interval_us();
  }
  ClaimResult result;
  if (settings.worker_id >= 0) {
    const int datacenter_id = std::max(settings.datacenter_id, 0);
    switch (claim(self, datacenter_id, settings.worker_id,
                  cap_of(datacenter_id, settings.worker_id), &result, error)) {
      case Claim::kClaimed:
        check_claim(&worker.view, datacenter_id, settings.worker_id, result);
        record_claim(self, datacenter_id, settings.worker_id, result);
        break;
      case Claim::kTaken:
        check_claim(&worker.view, datacenter_id, settings.worker_id, result);
        record_conflict(self, datacenter_id, settings.worker_id, result);
        break;
      case Claim::kRace:
        worker.next_attempt_us = lease_clock_us() + kRaceRetryUs;
        return;
      case Claim::kFailed:
        disconnect();
        record_failure(error);
        break;
    }
    publish();
    return;
  }

  // Automatic: renew what is held, else pick and claim, a few times if other
  // nodes win the picks.
  int datacenter_id = worker.view.datacenter_id;
  int worker_id = worker.view.worker_id;
  bool have = worker.view.state == State::kHeld;
  for (int round = 0; round < automatic::kPickAttempts; round++) {
    if (!have) {
      bool found = false;
      if (!pick(self, &datacenter_id, &worker_id, &found, error)) {
        if (found) {
          disconnect();
          record_failure(error);
        } else {
          worker.view.state = State::kExhausted;
          worker.view.node = -1;
          worker.view.valid_until_us = 0;
          worker.next_attempt_us = lease::retry_at_us(lease_clock_us(), lease_us());
        }
        publish();
        return;
      }
    }
    have = false;
    switch (
        claim(self, datacenter_id, worker_id, cap_of(datacenter_id, worker_id), &result, error)) {
      case Claim::kClaimed:
        check_claim(&worker.view, datacenter_id, worker_id, result);
        record_claim(self, datacenter_id, worker_id, result);
        publish();
        return;
      case Claim::kTaken:
        check_claim(&worker.view, datacenter_id, worker_id, result);
        [[fallthrough]];
      case Claim::kRace:
        // Stop using a leased identity that someone else now holds at once.
        if (worker.view.state == State::kHeld && worker.view.datacenter_id == datacenter_id &&
            worker.view.worker_id == worker_id) {
          worker.view.state = State::kStarting;
          worker.view.node = -1;
          worker.view.valid_until_us = 0;
          publish();
        }
        continue;
      case Claim::kFailed:
        disconnect();
        record_failure(error);
        publish();
        return;
    }
  }
  snprintf(error, sizeof(error), "other nodes took %d free identities in a row first",
           automatic::kPickAttempts);
  record_failure(error);
  publish();
}

// The identity settings changed (or the worker started): forget what was
// claimed for the old ones. Its lease simply expires in the registry.
void retarget() {
  View& view = worker.view;
  if (view.target_datacenter_id == settings.datacenter_id &&
      view.target_worker_id == settings.worker_id)
    return;
  reset_view(&view, settings.registry_configured ? State::kStarting : State::kDisabled);
  worker.next_attempt_us = 0;
  publish();
}

// Another registry, or none: what the probes found of the last one no longer
// applies. What this node remembers of its history stays: the next registry
// is compared with it (history.cpp).
void forget_registry() {
  RegistryFacts& facts = worker.view.registry;
  facts.durability = Durability::kUnknown;
  facts.standbys = 0;
  facts.system_identifier[0] = '\0';
  facts.timeline = 0;
  forget_rows_seen();
  worker.next_probe_us = 0;
}

void set_state(State state) {
  if (worker.view.state == state) return;
  reset_view(&worker.view, state);
  worker.next_attempt_us = 0;
  publish();
}

// Clean shutdown, as "Release" in the file header says. On failure the row
// keeps the ids_before it had.
void release() {
  View& view = worker.view;
  if (view.state != State::kHeld || !settings.registry_configured) return;
  const int datacenter_id = view.datacenter_id;
  const int worker_id = view.worker_id;
  view.state = State::kReleased;
  view.node = -1;
  view.valid_until_us = 0;
  publish();
  pg_memory_barrier();
  Generator* generator = node_generator();
  if (generator == nullptr) return;
  const Layout& layout = settings.layout;
  const int64_t last = generator->state().last_id.load();
  const int64_t ids_before = lease::release_ids_before_ms(layout, last);

  start_release();
  char error[kErrorSize];
  Self self;
  describe_self(&self);
  bool released = false;
  if ((!connected() && !connect_registry(error)) ||
      !release_row(self, datacenter_id, worker_id, view.mine.renewed_at, ids_before, &released,
                   error)) {
    ereport(LOG, (errmsg("snowflake registry: could not release datacenter_id %d, worker_id %d: %s",
                         datacenter_id, worker_id, error),
                  errdetail("The row keeps the ids_before of its last renewal.")));
    return;
  }
  if (released) {
    ereport(LOG, (errmsg("snowflake registry: released datacenter_id %d, worker_id %d",
                         datacenter_id, worker_id),
                  errdetail("The registry row now says this node's IDs run up to %s; a standby "
                            "promoted in its place, or this node restarted, takes it over and "
                            "issues at once. The lease runs on for other nodes.",
                            timestamp_text(timestamptz_from_unix_ms(ids_before)))));
  }
}

void reload() {
  ConfigReloadPending = false;
  const int lease_ms = settings.registry_lease_ms;
  const char* registry = pstrdup(settings.registry != nullptr ? settings.registry : "");
  ProcessConfigFile(PGC_SIGHUP);
  if (strcmp(registry, settings.registry != nullptr ? settings.registry : "") != 0)
    forget_registry();
  if (connected_to() != nullptr && strcmp(connected_to(), settings.registry) != 0) {
    disconnect();
    worker.next_attempt_us = 0;
  }
  if (lease_ms != settings.registry_lease_ms) worker.next_attempt_us = 0;
  retarget();
}

}  // namespace

}  // namespace snowflake::pg

namespace snowflake::pg::registry {

bool absorb_interrupts() {
  // Nothing else is "in flight" for a cancel to end: the request that is
  // gets told, and outside one the cancel is dropped, as an idle backend
  // drops it.
  const bool canceled = QueryCancelPending;
  QueryCancelPending = false;
  CHECK_FOR_INTERRUPTS();
  return canceled;
}

}  // namespace snowflake::pg::registry

using namespace snowflake;
using namespace snowflake::pg;

extern "C" PGDLLEXPORT void snowflake_registry_main(Datum);

void snowflake_registry_main(Datum) {
  pqsignal(SIGHUP, SignalHandlerForConfigReload);
  pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
  BackgroundWorkerUnblockSignals();
  // The bound check without a free worker slot: this incarnation only asks a
  // database (bound_check.cpp).
  ask_pending_database_here();
  // No database: this only makes the worker a backend that pg_stat_activity shows.
  BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);

  // The View survives a restart of this worker: a lease held stays held.
  read_view(&worker.view, sizeof(View));
  // What the node remembers of the registry's history (history.cpp).
  load_history(&worker.view);
  // What a slow claim or renewal waits for goes to the View (stall.cpp).
  watch_slow_requests(&worker.view, publish);
  worker.logged = worker.view.state;
  worker.logged_node = worker.view.node;
  retarget();

  // Log messages and errors allocate; each round starts from an empty context.
  MemoryContext round_context =
      AllocSetContextCreate(TopMemoryContext, "snowflake registry round", ALLOCSET_SMALL_SIZES);
  MemoryContextSwitchTo(round_context);

  while (!ShutdownRequestPending) {
    MemoryContextReset(round_context);
    if (ConfigReloadPending) reload();
    // The layout's end within a year (or past): the day's warning
    // (layout_end.cpp), looked for at least hourly.
    long timeout_ms = warn_of_layout_end_daily();
    // A node started without its state file: the check of its databases
    // (bound_check.cpp), once recovery is over, step by step beside the rest.
    if (bound_state() == BoundState::kChecking) {
      const long check_ms = RecoveryInProgress() ? kRecoveryPollMs : step_bound_check();
      if (check_ms >= 0) timeout_ms = std::min(timeout_ms, check_ms);
    }
    // The replication origin that keeps a second copy of the bound
    // (bound_register.cpp), set up on a primary once the bound is known.
    const long register_ms = step_register();
    if (register_ms >= 0)
      timeout_ms = timeout_ms < 0 ? register_ms : std::min(timeout_ms, register_ms);
    if (!settings.registry_configured) {
      disconnect();
      if (worker.view.state != State::kDisabled) forget_registry();
      set_state(State::kDisabled);
    } else if (RecoveryInProgress()) {
      disconnect();
      set_state(State::kStandby);
      timeout_ms = kRecoveryPollMs;
    } else if (settings.worker_id >= 0 && settings.node < 0) {
      set_state(State::kUnconfigured);
    } else {
      const State state = worker.view.state;
      if (state == State::kDisabled || state == State::kStandby || state == State::kUnconfigured ||
          state == State::kReleased)
        set_state(State::kStarting);
      if (lease_clock_us() >= worker.next_attempt_us) attempt();
      const long next_ms = static_cast<long>(
          std::max<int64_t>(0, (worker.next_attempt_us - lease_clock_us() + 999) / 1000));
      timeout_ms = timeout_ms < 0 ? next_ms : std::min(timeout_ms, next_ms);
    }
    if (ShutdownRequestPending) break;
    (void)WaitLatch(MyLatch,
                    WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | (timeout_ms >= 0 ? WL_TIMEOUT : 0),
                    timeout_ms, PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
    (void)absorb_interrupts();
  }
  release();
  disconnect();
  // Exit code 1: restarted if terminated alone; the postmaster is shutting down otherwise.
  proc_exit(1);
}

namespace snowflake::pg {

void register_registry_worker() {
  BackgroundWorker registration;
  memset(&registration, 0, sizeof(registration));
  registration.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
  // Also on a standby, where it waits for the promotion.
  registration.bgw_start_time = BgWorkerStart_ConsistentState;
  registration.bgw_restart_time = kRegistryRestartSeconds;
  worker_library_name(registration.bgw_library_name, sizeof(registration.bgw_library_name));
  strlcpy(registration.bgw_function_name, "snowflake_registry_main", BGW_MAXLEN);
  strlcpy(registration.bgw_name, kWorkerName, BGW_MAXLEN);
  strlcpy(registration.bgw_type, kWorkerName, BGW_MAXLEN);
  RegisterBackgroundWorker(&registration);
  // RegisterBackgroundWorker() only logs when max_worker_processes is used up.
  // The postmaster's list is an slist before PostgreSQL 17 and a circular
  // dlist after; this loop walks either (the lists' macros are not C++).
  for (auto* link = BackgroundWorkerList.head.next;
       link != nullptr && link != &BackgroundWorkerList.head; link = link->next) {
    const auto* registered = reinterpret_cast<const RegisteredBgWorker*>(
        reinterpret_cast<const char*>(link) - offsetof(RegisteredBgWorker, rw_lnode));
    if (strcmp(registered->rw_worker.bgw_function_name, "snowflake_registry_main") == 0 &&
        strcmp(registered->rw_worker.bgw_library_name, registration.bgw_library_name) == 0)
      registered_worker = true;
  }
}

bool registry_worker_registered() {
  return registered_worker;
}

}  // namespace snowflake::pg
