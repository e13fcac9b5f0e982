// The background worker "snowflake registry": one per node, started at
// consistent state (so also on a standby, where it waits for the promotion).
// Its decisions are the round of src/core/registry_round.hpp (claim, renew,
// pick, release, retries, races, failures, the states, the registry's
// history; the rule that keeps two nodes apart and the release are stated
// there): this file turns the settings, the clocks and the registry's answers
// into the round's events, and its actions into statements (claim.cpp, with
// the probes of what the registry can lose, durability.cpp, and of its
// history, history.cpp), the View (view.cpp, which backends read: lease.cpp)
// and log lines. Every wait is on its latch with a deadline.
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
// gives its lease back first: at most a second a step.
#include <algorithm>

#include "../../core/clock.hpp"
#include "../../core/pick.hpp"
#include "../../core/registry_round.hpp"
#include "../bound/bound_check.hpp"
#include "../bound/bound_register.hpp"
#include "../bound/durable.hpp"
#include "../layout_end.hpp"
#include "../node.hpp"
#include "../settings.hpp"
#include "claim.hpp"
#include "client.hpp"
#include "history.hpp"
#include "stall.hpp"
#include "view.hpp"

extern "C" {
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
}

namespace snowflake::pg {

using namespace registry;
namespace round = registry_round;

namespace {

struct Worker {
  round::Round round;  // the decisions' state
  View view;           // as last published, with what the answers said
  ClaimRow claimed;    // the last claim's row
  char error[kErrorSize];
  State logged;       // the last state written to the server log
  int64 logged_node;  // and its identity
};

Worker worker;

round::Settings round_settings() {
  round::Settings out;
  out.layout = settings.layout;
  out.registry_configured = settings.registry_configured;
  out.in_recovery = RecoveryInProgress();
  out.shutting_down = ShutdownRequestPending;
  out.datacenter_id = settings.datacenter_id;
  out.worker_id = settings.worker_id;
  out.node = settings.node;
  out.lease_ms = settings.registry_lease_ms;
  out.max_lead_ms = settings.max_lead_ms;
  return out;
}

round::Now round_now() {
  Generator* generator = node_generator();
  return round::Now{lease_clock_us(), unix_time_ms(),
                    generator != nullptr ? generator->state().last_id.load() : 0, connected()};
}

void log_state() {
  const View& view = worker.view;
  if (view.state == worker.logged && view.node == worker.logged_node) return;
  worker.logged = view.state;
  worker.logged_node = view.node;
  if (view.state == State::kHeld)
    ereport(LOG, (errmsg("snowflake registry: holding datacenter_id %d, worker_id %d",
                         view.datacenter_id, view.worker_id),
                  errdetail("Lease of %d ms, claimed at %s (registry clock).", view.lease_ms,
                            registry_time(view.mine.claimed_at))));
  else if (view.state == State::kConflict)
    ereport(LOG,
            (errmsg("snowflake registry: datacenter_id %d, worker_id %d is held by %s "
                    "(data directory %s, system identifier %s) since %s",
                    view.datacenter_id, view.worker_id, view.other.host, view.other.data_directory,
                    view.other.system_identifier, registry_time(view.other.claimed_at))));
  else if (view.state == State::kExhausted)
    ereport(LOG, (errmsg("snowflake registry: no free identity")));
}

// The round into the View (what the backends read), and its state logged.
void publish() {
  remember_history(worker.round.history);
  publish_round(worker.round, &worker.view);
  log_state();
}

void record_failure(const round::Output& out) {
  View& view = worker.view;
  if (out.failure == round::Output::kPicksLost)
    snprintf(worker.error, sizeof(worker.error),
             "other nodes took %d free identities in a row first", automatic::kPickAttempts);
  view.error_at = GetCurrentTimestamp();
  strlcpy(view.error, worker.error, sizeof(view.error));
  if (!out.failure_log) return;
  const round::Round& round = worker.round;
  ereport(LOG,
          (errmsg("snowflake registry: %s", worker.error),
           round.state == State::kHeld
               ? errdetail("The lease stays valid for %lld ms more.",
                           static_cast<long long>((round.valid_until_us - lease_clock_us()) / 1000))
               : 0));
}

// One of the round's actions (registry_round::Action says what each is).
void act(const round::Output& out, round::Action action, int* change) {
  RegistryFacts& facts = worker.view.registry;
  switch (action) {
    case round::Action::kForgetRegistry:
      facts.durability = Durability::kUnknown;
      facts.standbys = 0;
      facts.system_identifier[0] = '\0';
      facts.timeline = 0;
      break;
    case round::Action::kDisconnect:
      disconnect();
      break;
    case round::Action::kReset:
      reset_view(&worker.view, worker.round.state);
      break;
    case round::Action::kHistoryChanged:
      warn_history_changed(out.changes[std::min(*change, out.change_count - 1)]);
      ++*change;
      break;
    case round::Action::kClaimAboveFloor:
      log_claim_above_floor(worker.round, out.floor_ms);
      break;
    case round::Action::kRaiseFloor:
      raise_floor(out.floor, out.floor_ms, out.floor_log, worker.view);
      break;
    case round::Action::kRecordHeld:
    case round::Action::kRecordConflict:
      record_row(worker.claimed, out.floor_from, action == round::Action::kRecordHeld,
                 &worker.view);
      break;
    case round::Action::kFailure:
      record_failure(out);
      break;
    case round::Action::kReachedAgain:
      ereport(LOG, (errmsg("snowflake registry: reached the registry again")));
      break;
    case round::Action::kPublish:
      publish();
      break;
  }
}

// The round's step on `event`, its actions done and its requests run, each
// answer stepped in turn; the lease clock time it wants the next tick at (-1: none).
int64_t step(round::Event event) {
  for (;;) {
    const round::Output out = round::step(&worker.round, round_settings(), event, round_now());
    int change = 0;
    for (int i = 0; i < out.count; i++) act(out, out.actions[i], &change);
    remember_history(worker.round.history);
    if (out.request.kind == round::Request::kNone) return out.wake_at_us;
    if (out.request.kind == round::Request::kRelease) {
      release_lease(out.request, worker.error);
      return -1;
    }
    event = round::Event{};
    event.kind = round::Event::kAnswer;
    event.answer = ask_registry(out.request, &worker.claimed, &worker.view.registry, worker.error);
  }
}

void reload() {
  ConfigReloadPending = false;
  const int lease_ms = settings.registry_lease_ms;
  const char* registry = pstrdup(settings.registry != nullptr ? settings.registry : "");
  ProcessConfigFile(PGC_SIGHUP);
  round::Event event;
  event.kind = round::Event::kReload;
  event.registry_changed =
      strcmp(registry, settings.registry != nullptr ? settings.registry : "") != 0;
  event.connection_elsewhere =
      connected_to() != nullptr && strcmp(connected_to(), settings.registry) != 0;
  event.lease_changed = lease_ms != settings.registry_lease_ms;
  (void)step(event);
}

// The loop's duties beside the round, each a step that never waits; the
// milliseconds until one wants the loop again (-1: none). Another duty of the
// worker's loop goes here.
long other_duties() {
  // The layout's end within a year (or past): the day's warning
  // (layout_end.cpp), looked for at least hourly.
  long timeout_ms = warn_of_layout_end_daily();
  // A node started without its state file: the check of its databases
  // (bound_check.cpp), once recovery is over, step by step beside the rest.
  if (bound_state() == BoundState::kChecking) {
    const long check_ms = RecoveryInProgress() ? round::kRecoveryPollUs / 1000 : step_bound_check();
    if (check_ms >= 0) timeout_ms = timeout_ms < 0 ? check_ms : std::min(timeout_ms, check_ms);
  }
  // The bound's replication origin, set up on a primary (bound_register.cpp).
  const long register_ms = step_register();
  if (register_ms >= 0)
    timeout_ms = timeout_ms < 0 ? register_ms : std::min(timeout_ms, register_ms);
  return timeout_ms;
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
  restore_round(worker.view, &worker.round);
  worker.logged = worker.view.state;
  worker.logged_node = worker.view.node;
  round::Event start;
  start.kind = round::Event::kStart;
  (void)step(start);

  // Log messages and errors allocate; each round starts from an empty context.
  MemoryContext round_context =
      AllocSetContextCreate(TopMemoryContext, "snowflake registry round", ALLOCSET_SMALL_SIZES);
  MemoryContextSwitchTo(round_context);

  while (!ShutdownRequestPending) {
    MemoryContextReset(round_context);
    if (ConfigReloadPending) reload();
    long timeout_ms = other_duties();
    const int64_t wake_us = step(round::Event{});
    if (wake_us >= 0) {
      const long next_ms =
          static_cast<long>(std::max<int64_t>(0, (wake_us - lease_clock_us() + 999) / 1000));
      timeout_ms = timeout_ms < 0 ? next_ms : std::min(timeout_ms, next_ms);
    }
    if (ShutdownRequestPending) break;
    (void)WaitLatch(MyLatch,
                    WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | (timeout_ms >= 0 ? WL_TIMEOUT : 0),
                    timeout_ms, PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
    (void)absorb_interrupts();
  }
  round::Event shutdown;
  shutdown.kind = round::Event::kShutdown;
  (void)step(shutdown);
  disconnect();
  // Exit code 1: restarted if terminated alone; the postmaster is shutting down otherwise.
  proc_exit(1);
}
