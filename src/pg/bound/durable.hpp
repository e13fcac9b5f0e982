// The durable bound: the node's IDs stay unique across restarts, crashes and
// failover (durable.cpp states the protocol).
#pragma once

#include <cstdint>

#include "../../core/bound.hpp"

namespace snowflake::pg {

// Makes a durable bound after `timestamp`'s unit of time (and an interval beyond,
// kDurableIntervalMs in src/core/generator.hpp),
// written to WAL and the state file before it is used. With
// `wait` false it gives up at once if another backend is already at it.
// While the bound is not known (below) it refuses, or with `wait` false does
// nothing.
void make_durable(int64_t timestamp, bool wait);

// Whether the node knows a bound above every ID its data directory has issued
// (durable.cpp, "Where the bound comes from"); src/core/bound.hpp decides.
using BoundState = bound::State;
BoundState bound_state();
void set_bound_state(BoundState state);  // under durable_lock, exclusively

// Waits, interruptibly, while the databases are checked and the check makes
// progress; an error saying why if the bound is, or stays, unknown
// (bound_origin.cpp).
void require_known_bound();

// The registry worker's check of a node started without its state file
// (bound_check.cpp): none of the databases has the extension (`found` null),
// or these have (a short list for messages, such as "\"app\", \"shop\"").
void conclude_bound_check(const char* found);

// After `extension` was created in this backend's transaction (src/core/bound.hpp,
// bound::at_creation, decides): in pg_upgrade's server, the bound is marked
// unknown. Else, with the preload: from now on this data directory vouches for its IDs, so the
// state file is written (an empty bound) if there is none yet; while the databases are checked (so
// nothing is issued), a vouch instead (bound_origin.cpp, "Creations"), with a WARNING if the check
// cannot run; while the bound is unknown, only a WARNING. Never waits for the check.
void note_extension_created(unsigned int extension);

// Marks the bound unknown for a reason: `clause` ("this data directory was
// made by pg_upgrade, which ... in database %s") with `databases` (quoted
// names) in its %s; durably on disk (pg_snowflake/unknown; a failure raised
// at `elevel`), then in shared memory if the bound is not known
// (bound_origin.cpp, "Unknown stays unknown").
void mark_bound_unknown(const char* clause, const char* databases, int elevel);

// The object access hook that sees the extension created and dropped, and,
// in a server pg_upgrade runs, the mark of a library loaded there. From
// _PG_init, preloaded or not.
void install_bound_origin_hooks();

// snowflake_restore_bound() and snowflake_set_bound(): makes `until` (ms since
// the epoch) durable, written to WAL and the state file, and the next ID later
// than it; the bound is known from then on. Never lowers the bound; returns
// the bound in force.
int64_t adopt_bound(int64_t until);

// The ID bound in the state file of another data directory (one this one was
// upgraded or copied from), or an error saying why there is none.
uint64_t read_other_state_file(const char* data_directory);

}  // namespace snowflake::pg
