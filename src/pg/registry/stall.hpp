// What a claim or renewal the registry is slow to answer waits for there
// (stall.cpp states why it matters and how the worker finds out). The worker
// (worker.cpp) names its View; the client (client.cpp) tells of each slow
// statement and of each statement's end.
#pragma once

#include "../postgres.hpp"
#include "view.hpp"

namespace snowflake::pg::registry {

// The worker's View, whose registry facts the findings go to, and the
// function that publishes it.
void watch_slow_requests(View* view, void (*publish)());

// The statement `sql`, sent at `sent_us` (lease_clock_us()) on the connection
// whose registry session is process `backend_pid`, has had no answer for a
// while: asks the registry on a second connection, by `deadline_us`, what
// that session waits for, publishes it, and warns once per cause.
void ask_what_blocks(const char* sql, int backend_pid, int64_t sent_us, int64_t deadline_us);

// A connection attempt (`sql` nullptr) or the statement `sql` ended.
// `answered`: it succeeded; `slow`: it was asked about. An answer to a
// statement of the text that was found waiting ends the wait (a LOG line says
// how long it was), as does any failure that was not slow (the registry is
// then unreachable or refusing, not waiting); a slow failure keeps it (the
// next attempt asks again). Other answers say nothing of it: a read is
// answered while commits wait.
void request_ended(const char* sql, bool answered, bool slow);

}  // namespace snowflake::pg::registry
