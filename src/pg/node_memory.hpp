// The node's shared memory as node.cpp, durable.cpp and counters.cpp share it.
// node.cpp sets it up; each of the others touches only its own fields, under
// its own lock.
#pragma once

#include <cstdint>

#include "../core/generator.hpp"
#include "counters.hpp"
#include "postgres.hpp"

namespace snowflake::pg {

// The check of a node started without its state file (bound_check.cpp). It
// lives here so that it survives the registry worker's restarts; only the
// registry worker writes it, except `answer`, which the process that asked a
// database writes, and asked_name, which backends read under durable_lock.
struct BoundCheck {
  Oid done_through;              // every database up to this OID has been checked
  Oid asked;                     // the database being asked; InvalidOid: none
  uint32 asker;                  // who asks it: a bound_check.cpp Asker
  TimestampTz asked_at;          // since when
  char asked_name[NAMEDATALEN];  // its name
  pg_atomic_uint64 answer;       // (database OID << 32) | the answer
  pg_atomic_uint32 progress;     // bumped at every step; require_known_bound() watches it
  int found_count;               // databases found with the extension so far
  int found_shown;               // ... of which `found` names
  char found[200];               // their names, quoted, as many as fit whole
  bool logged_no_slot;           // "no worker slot free" was logged
};

// "snowflake generator": the generator's state (one cache line of atomics, see
// src/core/generator.hpp) plus what the durability protocol and the counters
// of exited backends need.
struct SharedNode {
  GeneratorState generator;
  LWLock* durable_lock;
  LWLock* counters_lock;
  int64_t written_until;  // under durable_lock
  // The durable bound in force, which the state file records and the
  // replication origin holds (bound/bound_register.cpp): above written_until
  // only after a clean shutdown's exact bound; under durable_lock.
  int64_t written_durable;
  XLogRecPtr written_lsn;
  bool state_file_written;  // pg_snowflake/state exists; under durable_lock
  // The replication origin's value was consulted this start (bound::at_origin);
  // under durable_lock.
  bool origin_consulted;
  // The registry worker warned that the origin could not be set up (once).
  bool register_warned;
  // The replication origin of the bound as last looked up by name (0: not
  // yet), for the registry worker's look at its state
  // (bound_register_worker.cpp).
  uint16 register_origin;
  // Why the start read no state file ("was missing", "was damaged (...)",
  // "could not be opened (...)"), or ""; written by the postmaster.
  char state_file_problem[128];
  pg_atomic_uint32 bound_state;  // a BoundState (durable.hpp); written under durable_lock
  char bound_unknown_why[512];   // kUnknown: why (pg_snowflake/unknown), under durable_lock
  BoundCheck bound_check;
  int64_t retired[kCounterCount];  // under counters_lock
  // When the server log last warned of the layout's end (ms since 1970; 0:
  // never): written by the postmaster, then by the registry worker only
  // (layout_end.cpp).
  pg_atomic_uint64 layout_end_warned_at;
};

// "snowflake backends": one slot of counters per backend, written only by its
// owner, so counting costs no contention.
struct alignas(64) BackendSlot {
  int pid;  // 0 when free
  pg_atomic_uint64 value[kCounterCount];
};

// Set once shared memory is attached (preload only).
extern SharedNode* shared_node;
extern BackendSlot* backend_slots;

inline int backend_slot_count() {
  return MaxBackends;
}

// The postmaster, when it (re)initializes shared memory: the generator starts
// above the bound in the state file, and a clean shutdown writes the exact one.
void restore_durable_bound();

}  // namespace snowflake::pg
