// The registry worker's libpq client: one connection to the database in
// snowflake.registry, used without blocking (every wait is on the worker's
// latch, with a deadline), and the registry table it resolves once per
// connection. Only the worker (worker.cpp, claim.cpp) uses it.
#pragma once

#include "../postgres.hpp"

extern "C" {
#include "libpq-fe.h"
}

namespace snowflake::pg::registry {

// Serves the worker's pending interrupts after a wait, as CHECK_FOR_INTERRUPTS()
// serves a backend's (worker.cpp); true if a query cancel asked to end the
// request in flight.
bool absorb_interrupts();

// How long connecting and each statement may take (also the registry's
// statement_timeout and lock_timeout), in ms.
int request_timeout_ms();

// The worker gives its lease back at shutdown: from now on a shutdown request
// no longer cuts requests short, and each gets at most a second.
void start_release();

// Whether a connection is open, and the snowflake.registry it was opened with.
bool connected();
const char* connected_to();

// Connects to snowflake.registry and resolves the table; false with the reason
// in `error` (kErrorSize bytes), after which nothing is open.
bool connect_registry(char* error);
void disconnect();

// The registry server the connection reached, "host:port" (no password).
void describe_server(char* out, size_t size);

// `text` with each {table} replaced by the table the connection resolved
// (allocated in the current memory context).
const char* with_table(const char* text);

// Runs one statement; the result (PGRES_TUPLES_OK or PGRES_COMMAND_OK) or
// nullptr with the reason in `error`, after which the caller disconnects.
// A statement the registry answers only after committing it locally, its wait
// for the synchronous standbys canceled, counts as failed. One unanswered for
// a second (half the request timeout, if shorter) is asked about
// (stall.hpp), and its end is told there.
PGresult* run(const char* sql, int count, const char* const* parameters, char* error);

// Runs one statement on a second, short-lived connection to the registry
// server the worker's connection reached (stall.cpp asks what a slow
// statement waits for), by the deadline; nullptr with the reason in `error`.
PGresult* ask_beside(const char* sql, int count, const char* const* parameters, int64_t deadline_us,
                     char* error);

}  // namespace snowflake::pg::registry
