// The registry worker's libpq client. Nothing here blocks: the connection is
// made with PQconnectStartParams and PQconnectPoll, statements are sent with
// PQsendQueryParams on a non-blocking connection, and every wait for its
// socket is on the worker's latch with a deadline (request_timeout_ms()), so
// a shutdown, a reload or the postmaster's death is never held up for long.
// After every wake-up the worker's interrupts are served as a backend's are
// (absorb_interrupts(), worker.cpp): a ProcSignalBarrier is absorbed at once,
// and a query cancel ends the request in flight.
//
// The table. It is resolved once per connection through the connection's
// search_path (see connect_registry()), and every statement names it with its
// schema, whatever the search_path does later.
#include "client.hpp"
#include "statements.hpp"

#include <algorithm>
#include <cstdlib>

#include "../settings.hpp"
#include "../text.hpp"
#include "view.hpp"

extern "C" {
#include "postmaster/interrupt.h"
}

namespace snowflake::pg::registry {

namespace {

constexpr char kTable[] = "snowflake_registry";
// At shutdown, the release of the lease gets at most this long.
constexpr int kReleaseTimeoutMs = 1000;

struct Client {
  PGconn* connection;
  char* connected_to;  // malloc'd copy of the snowflake.registry it connected with
  // The registry table as the connection resolved it, schema-qualified and
  // quoted: every statement names it so, whatever the search_path does later.
  char table[2 * NAMEDATALEN * 2 + 8];
  // Set while the worker gives its lease back at shutdown.
  bool releasing;
};

Client client;

// libpq's message on one line, after `what`.
void set_error(char* error, const char* what, const char* message) {
  char line[kErrorSize];
  copy_printable(line, sizeof(line), message);
  snprintf(error, kErrorSize, "%s: %s", what, line);
}

// Waits until the connection's socket is ready for `events`; false (with the
// reason in `error`) at the deadline or when the server shuts down.
bool wait_for_socket(int events, int64_t deadline_us, char* error) {
  for (;;) {
    if (ShutdownRequestPending && !client.releasing) {
      snprintf(error, kErrorSize, "the server is shutting down");
      return false;
    }
    const pgsocket socket = PQsocket(client.connection);
    if (socket == PGINVALID_SOCKET) {
      set_error(error, "lost the connection to the registry", PQerrorMessage(client.connection));
      return false;
    }
    const int64_t left_us = deadline_us - lease_clock_us();
    if (left_us <= 0) {
      snprintf(error, kErrorSize, "the registry did not answer within %d ms", request_timeout_ms());
      return false;
    }
    const int ready =
        WaitLatchOrSocket(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH | events, socket,
                          static_cast<long>((left_us + 999) / 1000), PG_WAIT_EXTENSION);
    if (ready & WL_LATCH_SET) ResetLatch(MyLatch);
    if (absorb_interrupts()) {
      snprintf(error, kErrorSize, "the request to the registry was canceled (pg_cancel_backend)");
      return false;
    }
    if (ready & events) return true;
  }
}

}  // namespace

// For connecting and for each statement (also the registry's statement_timeout):
// a quarter of the lease, at most 10 s, so that a renewal sent a third into the
// lease has failed or succeeded long before the node must stop (0.9 of it).
int request_timeout_ms() {
  const int timeout_ms = std::min(settings.registry_lease_ms / 4, 10000);
  return client.releasing ? std::min(timeout_ms, kReleaseTimeoutMs) : timeout_ms;
}

void start_release() {
  client.releasing = true;
}

bool connected() {
  return client.connection != nullptr;
}

const char* connected_to() {
  return client.connected_to;
}

void disconnect() {
  if (client.connection != nullptr) PQfinish(client.connection);
  client.connection = nullptr;
  free(client.connected_to);
  client.connected_to = nullptr;
  client.table[0] = '\0';
}

const char* with_table(const char* text) {
  constexpr char kToken[] = "{table}";
  StringInfoData out;
  initStringInfo(&out);
  for (const char* p = text; *p != '\0';) {
    if (strncmp(p, kToken, sizeof(kToken) - 1) == 0) {
      appendStringInfoString(&out, client.table);
      p += sizeof(kToken) - 1;
    } else {
      appendStringInfoChar(&out, *p++);
    }
  }
  return out.data;
}

PGresult* run(const char* sql, int count, const char* const* parameters, char* error) {
  PGconn* connection = client.connection;
  const int64_t deadline_us = lease_clock_us() + int64_t{request_timeout_ms()} * 1000;
  if (!PQsendQueryParams(connection, sql, count, nullptr, parameters, nullptr, nullptr, 0)) {
    set_error(error, "could not send a statement to the registry", PQerrorMessage(connection));
    return nullptr;
  }
  for (;;) {
    const int flushed = PQflush(connection);
    if (flushed == 0) break;
    if (flushed < 0 || !wait_for_socket(WL_SOCKET_WRITEABLE, deadline_us, error)) {
      if (flushed < 0)
        set_error(error, "could not send to the registry", PQerrorMessage(connection));
      return nullptr;
    }
  }
  PGresult* result = nullptr;
  for (;;) {
    while (PQisBusy(connection)) {
      if (!wait_for_socket(WL_SOCKET_READABLE, deadline_us, error)) {
        PQclear(result);
        return nullptr;
      }
      if (!PQconsumeInput(connection)) {
        set_error(error, "lost the connection to the registry", PQerrorMessage(connection));
        PQclear(result);
        return nullptr;
      }
    }
    PGresult* next = PQgetResult(connection);
    if (next == nullptr) break;
    PQclear(result);
    result = next;
  }
  if (result == nullptr) {
    set_error(error, "the registry sent no result", PQerrorMessage(connection));
    return nullptr;
  }
  const ExecStatusType status = PQresultStatus(result);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    set_error(error, "the registry refused a statement", PQresultErrorMessage(result));
    PQclear(result);
    return nullptr;
  }
  return result;
}

// Connects, bounds the registry's statement and lock waits, and resolves the
// table once: the first schema of the connection's search_path that has
// snowflake_registry (to_regclass), else it is created in the schema an
// unqualified CREATE TABLE would use (current_schema(), the first schema of
// the path that exists). A role without CREATE never gets that far if an
// administrator created it. Every later statement names the table with that
// schema.
bool connect_registry(char* error) {
  char timeout_seconds[16];
  snprintf(timeout_seconds, sizeof(timeout_seconds), "%d", (request_timeout_ms() + 999) / 1000);
  // The connection string comes after the defaults, so it may override them.
  const char* const keywords[] = {"fallback_application_name", "connect_timeout", "dbname",
                                  nullptr};
  const char* const values[] = {kWorkerName, timeout_seconds, settings.registry, nullptr};
  const int64_t deadline_us = lease_clock_us() + int64_t{request_timeout_ms()} * 1000;
  client.connection = PQconnectStartParams(keywords, values, 1);
  if (client.connection == nullptr) {
    snprintf(error, kErrorSize, "could not connect to the registry: out of memory");
    return false;
  }
  client.connected_to = strdup(settings.registry);
  PostgresPollingStatusType status = PGRES_POLLING_WRITING;
  if (PQstatus(client.connection) == CONNECTION_BAD) status = PGRES_POLLING_FAILED;
  while (status != PGRES_POLLING_OK) {
    if (status == PGRES_POLLING_FAILED) {
      set_error(error, "could not connect to the registry", PQerrorMessage(client.connection));
      disconnect();
      return false;
    }
    const int events = status == PGRES_POLLING_READING ? WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE;
    if (!wait_for_socket(events, deadline_us, error)) {
      disconnect();
      return false;
    }
    status = PQconnectPoll(client.connection);
  }
  if (PQsetnonblocking(client.connection, 1) != 0) {
    set_error(error, "could not set up the registry connection", PQerrorMessage(client.connection));
    disconnect();
    return false;
  }

  char timeout[32];
  snprintf(timeout, sizeof(timeout), "%dms", request_timeout_ms());
  const char* const parameters[] = {timeout, kTable};
  PGresult* result = run(
      "SELECT pg_catalog.set_config('statement_timeout', $1, false),\n"
      "    pg_catalog.set_config('lock_timeout', $1, false),\n"
      "    (SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname)\n"
      "       FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\n"
      "       WHERE c.oid = pg_catalog.to_regclass($2)),\n"
      "    pg_catalog.quote_ident(pg_catalog.current_schema()) || '.' || $2",
      2, parameters, error);
  if (result == nullptr) {
    disconnect();
    return false;
  }
  const bool exists = PQntuples(result) == 1 && !PQgetisnull(result, 0, 2);
  const bool creatable = PQntuples(result) == 1 && !PQgetisnull(result, 0, 3);
  if (exists || creatable)
    strlcpy(client.table, PQgetvalue(result, 0, exists ? 2 : 3), sizeof(client.table));
  PQclear(result);
  if (!exists && !creatable) {
    snprintf(error, kErrorSize,
             "the registry has no table %s in the search_path, and no schema in the search_path "
             "to create it in",
             kTable);
    disconnect();
    return false;
  }
  if (!exists) {
    result = run(with_table(kCreateTable), 0, nullptr, error);
    if (result == nullptr) {
      disconnect();
      return false;
    }
    PQclear(result);
  }
  return true;
}

}  // namespace snowflake::pg::registry
