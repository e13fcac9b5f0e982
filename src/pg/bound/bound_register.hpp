// The durable bound's second copy, in the replication origin
// "snowflake_bound" (bound_register.cpp states why and how), and the
// "snowflake bound register" worker that sets it up
// (bound_register_worker.cpp).
#pragma once

#include <cstdint>

#include "../compat.hpp"  // ReplOriginId, replication/origin.h

namespace snowflake::pg {

constexpr char kBoundOriginName[] = "snowflake_bound";

// The locks that keep the origin from being dropped (or created and given a
// state) while a backend reads or advances it, and the origin's id
// (InvalidReplOriginId if there is none). Plain data: no destructor.
struct RegisterLock {
  ReplOriginId origin = InvalidReplOriginId;
  bool table = false;  // RowExclusiveLock on pg_replication_origin
  bool busy = false;   // a lock was held and `wait` was false: nothing taken
};

// Takes them: in a transaction, before durable_lock (a heavyweight lock's
// wait answers interrupts, an LWLock's does not). Nothing is taken when the
// server has no origin states. With `wait` false it gives up at once if a
// lock is held (`busy`).
RegisterLock lock_register(bool wait);
void unlock_register(const RegisterLock& lock);

// The bound the origin holds (a time of the layout); false if it has no state.
bool register_bound(ReplOriginId origin, int64_t* until);

// Raises the origin to `until` if it has a state (never lowers it): WAL-logged,
// flushed with the bound record that follows. Under durable_lock.
void raise_register(ReplOriginId origin, int64_t until);

// Once per start, before the first ID (make_durable, adopt_bound) or before
// the databases are checked: what the origin's value changes
// (bound::at_origin). Under durable_lock, exclusively.
void consult_register(ReplOriginId origin);

// consult_register() with its locks, in a process connected to a database (a
// backend, the check of the databases), unless consulted already. With
// `wait` false it does nothing if a lock is held.
void consult_register_connected(bool wait);

// The postmaster at start, before recovery: the value of the origin `origin`
// (the id the state file records) in the checkpoint of the replication
// origins (pg_logical/replorigin_checkpoint, read as a file); false if it
// has none there or the file cannot be read as PostgreSQL writes it.
bool checkpointed_register_bound(uint16 origin, int64_t* until);

// The WARNING of a state file found older than the origin.
void report_state_file_older(int64_t file_durable, int64_t until);

// pg_upgrade's server, as it marks the bound unknown: the origin's state, set
// up while the new cluster was tried out, cleared (it covers none of the
// data that arrives), in a transaction; nothing outside one.
void clear_register();

// The "snowflake bound register" worker's work, in a process connected to a
// database: the origin created if it is missing, then its first state, the
// durable bound in force.
void establish_register();

// The registry worker, once recovery is over and the bound is known: starts
// the short-lived "snowflake bound register" worker once per start, which
// consults the origin at once and, if it has no state, creates it and gives
// it its first state, the durable bound in force; looks again every minute. Returns how soon to
// come back, in ms (-1: not now); a failure is a WARNING, once, and a retry a minute later.
long step_register();

}  // namespace snowflake::pg
