// The registry's shared memory: one View of this node's lease, written by the
// registry worker and read by every backend; and this postmaster's token.
//
// The token. Every claim carries it, and the registry takes a claimant for
// the row's holder (renewing) only with the same token as well as the same
// system identifier, timeline, host and data directory
// (src/core/registry_row.hpp): two running postmasters of one data directory
// (a clone of a machine or a volume, started under the same names) never
// pass for one holder. It is drawn (pg_strong_random) once per postmaster, at
// its first shared-memory initialization, and kept in the postmaster's memory,
// so a reinitialization after a backend crashed (restart_after_crash: the
// same postmaster, its generator restored from the durable bound) keeps it;
// a new postmaster draws a new one. 0 means none (a row written by 1.6).
//
// Who writes what. The "snowflake registry" worker (worker.cpp) is the only
// writer of the View: its round (src/core/registry_round.hpp) as it stands
// after each step, and what the registry's answers said; backends only read
// it (lease.cpp, status.cpp), and never talk to the registry themselves. The
// View outlives a restart of the worker, which restores its round from it,
// so a lease held stays held.
//
// The seqlock. The worker makes changecount odd, copies the View in, makes
// changecount even again, and broadcasts the condition variable. Readers copy
// the part they need between two reads of changecount and retry if it was odd
// or moved, so they take no lock. issue() reads the hot part (nine words) this
// way twice per call, before and after its reservation; without a registry it
// reads none (issuing_node() in registry.hpp).
#include "view.hpp"

#include "../../core/clock.hpp"
#include "../settings.hpp"
#include "registry.hpp"

namespace snowflake::pg {

namespace registry {

SharedRegistry* shared = nullptr;

namespace {

shmem_request_hook_type previous_request_hook = nullptr;
shmem_startup_hook_type previous_startup_hook = nullptr;

// In the postmaster, which keeps it across reinitializations.
int64 postmaster_token = 0;

int64 draw_token() {
  uint64 value = 0;
  while (value == 0) {
    if (!pg_strong_random(&value, sizeof(value))) {
      // No source of randomness (cannot happen on a supported platform): the
      // start time and process are unique enough to tell postmasters apart.
      value = static_cast<uint64>(GetCurrentTimestamp()) * UINT64CONST(0x9E3779B97F4A7C15) ^
              static_cast<uint64>(PostmasterPid);
    }
  }
  return static_cast<int64>(value);
}

void request_hook() {
  if (previous_request_hook) previous_request_hook();
  RequestAddinShmemSpace(MAXALIGN(sizeof(SharedRegistry)));
}

void startup_hook() {
  if (previous_startup_hook) previous_startup_hook();
  LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
  bool found = false;
  shared = static_cast<SharedRegistry*>(
      ShmemInitStruct("snowflake registry", sizeof(SharedRegistry), &found));
  if (!found) {
    pg_atomic_init_u32(&shared->changecount, 0);
    ConditionVariableInit(&shared->changed);
    if (postmaster_token == 0) postmaster_token = draw_token();
    shared->token = postmaster_token;
    memset(static_cast<void*>(&shared->view), 0, sizeof(View));
    reset_view(&shared->view, settings.registry_configured ? State::kStarting : State::kDisabled);
  }
  LWLockRelease(AddinShmemInitLock);
}

}  // namespace

void write_view(const View& view) {
  pg_atomic_fetch_add_u32(&shared->changecount, 1);  // a full barrier
  memcpy(&shared->view, &view, sizeof(View));
  pg_write_barrier();
  pg_atomic_fetch_add_u32(&shared->changecount, 1);
  ConditionVariableBroadcast(&shared->changed);
}

void reset_view(View* view, State state) {
  const RegistryFacts facts = view->registry;
  memset(static_cast<void*>(view), 0, sizeof(View));
  view->registry = facts;
  view->state = state;
  view->target_datacenter_id = settings.datacenter_id;
  view->target_worker_id = settings.worker_id;
  view->node = -1;
  view->datacenter_id = -1;
  view->worker_id = -1;
}

void publish_round(const registry_round::Round& round, View* view) {
  view->state = round.state;
  view->target_datacenter_id = round.target_datacenter_id;
  view->target_worker_id = round.target_worker_id;
  view->node = round.node;
  view->valid_until_us = round.valid_until_us;
  view->ids_before = round.ids_before;
  view->floor = round.floor;
  view->gap_from = round.gap_from;
  view->gap_until = round.gap_until;
  view->datacenter_id = round.datacenter_id;
  view->worker_id = round.worker_id;
  view->lease_ms = static_cast<int32>(round.lease_ms);
  RegistryFacts& facts = view->registry;
  facts.history = round.history;
  facts.history_unreadable = round.history_unreadable;
  facts.history_changed_at =
      round.history.changed_at_ms != 0 ? timestamptz_from_unix_ms(round.history.changed_at_ms) : 0;
  write_view(*view);
}

void restore_round(const View& view, registry_round::Round* round) {
  round->state = view.state;
  round->target_datacenter_id = view.target_datacenter_id;
  round->target_worker_id = view.target_worker_id;
  round->datacenter_id = view.datacenter_id;
  round->worker_id = view.worker_id;
  round->node = view.node;
  round->valid_until_us = view.valid_until_us;
  round->ids_before = view.ids_before;
  round->floor = view.floor;
  round->gap_from = view.gap_from;
  round->gap_until = view.gap_until;
  round->lease_ms = view.lease_ms;
  round->renewed_at_us = TIMESTAMP_NOT_FINITE(view.mine.renewed_at)
                             ? INT64_MAX
                             : view.mine.renewed_at + kPostgresEpochUnixMs * 1000;
  round->history = view.registry.history;
  round->history_unreadable = view.registry.history_unreadable;
}

}  // namespace registry

void request_registry_memory() {
  registry::previous_request_hook = shmem_request_hook;
  shmem_request_hook = registry::request_hook;
  registry::previous_startup_hook = shmem_startup_hook;
  shmem_startup_hook = registry::startup_hook;
}

}  // namespace snowflake::pg
