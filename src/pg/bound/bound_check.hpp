// The check of a node that started without its state file (bound_origin.cpp,
// "Where the bound comes from"), run by the registry worker (bound_check.cpp).
#pragma once

#include <cstdint>

namespace snowflake::pg {

// The postmaster restarts the registry worker this long after it exits.
constexpr int kRegistryRestartSeconds = 5;

// The registry worker, first thing at start: if its last incarnation found
// no background worker slot for the check, asks the database itself and
// exits (does not return then).
void ask_pending_database_here();

// The registry worker's loop, once recovery has ended: one step of the check
// while the bound is being checked (it never waits for a database). Returns
// how soon, in ms, to come back, or -1 if the check is over. May exit the
// worker, to be restarted, when no worker slot is free (above).
long step_bound_check();

// How long a backend waits for a check that does not move on.
constexpr int64_t kCheckStallMs = 3 * kRegistryRestartSeconds * 1000;

// In a backend: waits while the bound is being checked, for as long as the
// check moves on (at most kCheckStallMs without progress), answering
// interrupts. The caller looks at bound_state() after it.
void wait_while_the_check_moves();

}  // namespace snowflake::pg
