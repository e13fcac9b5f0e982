// The View: what the registry worker knows of this node's lease, published in
// shared memory for the backends, and read without a lock (view.cpp states the
// seqlock). Internal to src/pg/registry/; the rest of the module sees
// registry.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>

#include "../../core/lease.hpp"
#include "../../core/registry_history.hpp"
#include "../../core/registry_round.hpp"
#include "../postgres.hpp"
#include "../time.hpp"

extern "C" {
#include "storage/condition_variable.h"
}

namespace snowflake::pg::registry {

constexpr char kWorkerName[] = "snowflake registry";

constexpr int kSystemIdentifierSize = 24;
constexpr int kHostSize = 256;
constexpr int kErrorSize = 512;
constexpr int kWaitSize = 64;

// The worker's states (src/core/registry_round.hpp says when each holds).
using State = registry_round::State;

// A registry row as the worker saw it.
struct Holder {
  char system_identifier[kSystemIdentifierSize];
  int64 timeline;
  char host[kHostSize];
  char data_directory[MAXPGPATH];
  TimestampTz claimed_at;
  TimestampTz renewed_at;
  TimestampTz expires_at;
};

// What the registry can lose of what it acknowledged, as the worker's last
// probe of it found (durability.cpp).
enum class Durability : int32 {
  kUnknown,       // not probed yet, or its pg_stat_replication is not readable
  kSynchronous,   // synchronous_standby_names set: commits wait for a standby
  kNoStandby,     // nothing streams from it
  kAsynchronous,  // standbys stream from it, none synchronous: a failover may lose commits
  kInRecovery,    // it is a standby itself (it takes no claim)
};

// The registry as the worker's probes saw it; kept across reset_view(). The
// probes' facts are cleared when the registry changes (snowflake.registry) or
// is turned off; its history is not (history.cpp: another registry is a
// change of it).
struct RegistryFacts {
  Durability durability;
  int32 standbys;  // rows of its pg_stat_replication, -1 if unknown
  // Its pg_control_system() and timeline at the last probe ("" and 0 when
  // unknown: not probed, or not executable by the role).
  char system_identifier[kSystemIdentifierSize];
  int64 timeline;
  // What this node remembers of the registry's history (history.cpp), read
  // from pg_snowflake/registry once per shared-memory initialization
  // (history_loaded): its identity, the floor of claims after a change.
  bool history_loaded;
  bool history_unreadable;  // the file could not be read: a change at the first probe
  registry_history::Memory history;
  // When a change of its history was last seen (the registry's clock), 0 if
  // never: history.changed_at_ms for snowflake_registry_status.
  TimestampTz history_changed_at;
  // What the registry's session of this worker's slow claim or renewal waits
  // for there ("synchronous standbys", or a wait event: stall.cpp), and since
  // when (the first slow request's sending); "" and 0 when none does.
  char waits_for[kWaitSize];
  TimestampTz waiting_since;
};

// A registry time as text; 0 (no such time) is "(never)".
inline const char* registry_time(TimestampTz t) {
  return t == 0 ? "(never)" : timestamp_text(t);
}

struct View {
  // What issue() reads (copied up to `mine`).
  State state;
  int32 target_datacenter_id;  // the settings the worker acts on
  int32 target_worker_id;
  int64 node;            // leased or confirmed (kHeld), else -1
  int64 valid_until_us;  // on lease_clock_us() (kHeld)
  // (kHeld) The ids_before of the last accepted claim or renewal, as a
  // timestamp of the layout: every ID returned lies below it.
  int64 ids_before;
  // The floor inherited at the last takeover (a timestamp of the layout, 0 if
  // none): every ID returned lies at or above it (lease::may_return).
  int64 floor;
  // After a change of the registry's history seen while held (history.cpp):
  // no ID of a unit in [gap_from, gap_until) is returned (0, 0: none).
  int64 gap_from;
  int64 gap_until;
  // The rest, for errors and snowflake_registry_status().
  Holder mine;  // this node's row (kHeld); its identity also when contested
  int32 datacenter_id;
  int32 worker_id;
  int32 lease_ms;
  Holder other;  // kConflict
  // The host of the node the floor came from ("" if unknown).
  char floor_host[kHostSize];
  TimestampTz error_at;
  char error[kErrorSize];
  RegistryFacts registry;
};

constexpr size_t kHotSize = offsetof(View, mine);

// The hot part as the lease decisions (src/core/lease.hpp) take it.
inline lease::Grant grant_of(const View& view, bool current) {
  return lease::Grant{current && view.state == State::kHeld,
                      view.node,
                      view.valid_until_us,
                      view.ids_before,
                      view.floor,
                      view.gap_from,
                      view.gap_until};
}

struct SharedRegistry {
  pg_atomic_uint32 changecount;  // odd while the worker writes `view`
  ConditionVariable changed;     // broadcast after every write
  // This postmaster's token (view.cpp): drawn when it starts, never 0, the
  // same after its reinitialization following a crashed backend.
  int64 token;
  View view;
};

// Set once shared memory is attached (preload only).
extern SharedRegistry* shared;

// Seqlock read of the first `size` bytes of the View (kHotSize, or all of it).
// Inline: issue() calls it twice per ID when a registry is configured.
inline void read_view(View* out, size_t size) {
  for (;;) {
    const uint32 before = pg_atomic_read_u32(&shared->changecount);
    pg_read_barrier();
    memcpy(static_cast<void*>(out), &shared->view, size);
    pg_read_barrier();
    if ((before & 1) == 0 && pg_atomic_read_u32(&shared->changecount) == before) return;
    pg_spin_delay();
  }
}

// The worker's write (the only writer, so no lock); broadcasts `changed`.
void write_view(const View& view);

// Empties `view` into `state`, for the identity settings as they are now; its
// `registry` facts are kept.
void reset_view(View* view, State state);

// The worker's round (src/core/registry_round.hpp) into `view`, written; and
// back from the View at the worker's start (the View outlives the worker).
void publish_round(const registry_round::Round& round, View* view);
void restore_round(const View& view, registry_round::Round* round);

// The clock of leases and waits: monotonic, and unlike CLOCK_MONOTONIC it
// keeps counting while the machine is suspended, so a node that wakes up after
// its lease has passed knows it.
inline int64_t lease_clock_us() {
  timespec now;
  clock_gettime(CLOCK_BOOTTIME, &now);
  return int64_t{now.tv_sec} * 1000000 + now.tv_nsec / 1000;
}

}  // namespace snowflake::pg::registry
