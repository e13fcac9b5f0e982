// The registry worker's libpq client. Nothing here blocks: the connection is
// made with PQconnectStartParams and PQconnectPoll, statements are sent with
// PQsendQueryParams on a non-blocking connection, and every wait for its
// socket is on the worker's latch with a deadline (request_timeout_ms()), so
// a shutdown, a reload or the postmaster's death is never held up for long.
// After every wake-up the worker's interrupts are served as a backend's are
// (absorb_interrupts(), worker.cpp): a ProcSignalBarrier is absorbed at once,
// and a query cancel ends the request in flight.
//
// The table and the search_path. The table is resolved once per connection
// through the connection's search_path, among the schemas and tables the
// registry may trust (see connect_registry()); the session's search_path is
// then pinned to pg_catalog, and every statement names the table with its
// schema. No function or operator another role planted in a schema of the
// path runs in the worker's session. Its synchronous_commit is pinned to on
// as well (durability.cpp).
//
// Slow statements and unconfirmed commits. A statement unanswered for a
// second (half the request timeout, if shorter) is asked about on a second,
// short-lived connection to the same server (stall.cpp: what the registry
// waits for, such as its synchronous standbys). A commit whose wait for the
// synchronous standbys the registry canceled answers with its WARNING from
// SyncRepWaitForLSN: committed there locally, perhaps not on its standbys. It
// is not counted (the statement fails): a claim or renewal the node does not
// count only makes other nodes wait longer and start higher.
#include "client.hpp"
#include "statements.hpp"

#include <algorithm>
#include <cstdlib>

#include "../../core/registry_round.hpp"
#include "../settings.hpp"
#include "../text.hpp"
#include "stall.hpp"
#include "view.hpp"

extern "C" {
#include "postmaster/interrupt.h"
}

namespace snowflake::pg::registry {

namespace {

constexpr char kTable[] = "snowflake_registry";
// At shutdown, the release of the lease gets at most this long.
constexpr int kReleaseTimeoutMs = 1000;
// A statement unanswered for this long (or half the request timeout, if
// shorter) is asked about (stall.cpp).
constexpr int64_t kSlowRequestMs = 1000;

struct Client {
  PGconn* connection;
  char* connected_to;  // malloc'd copy of the snowflake.registry it connected with
  // The registry table as the connection resolved it, schema-qualified and
  // quoted: every statement names it so, whatever the search_path does later.
  char table[2 * NAMEDATALEN * 2 + 8];
  // Set while the worker gives its lease back at shutdown.
  bool releasing;
  // The statement in flight got the registry's WARNING that its wait for the
  // synchronous standbys was canceled (note_notice), and its message.
  bool unconfirmed;
  char unconfirmed_message[256];
};

Client client;

// libpq's message on one line, after `what`.
void set_error(char* error, const char* what, const char* message) {
  char line[kErrorSize];
  copy_printable(line, sizeof(line), message);
  snprintf(error, kErrorSize, "%s: %s", what, line);
}

// Waits until `connection`'s socket is ready for `events`; false (with the
// reason in `error`) at the deadline or when the server shuts down, with
// *timed_out (if given) saying whether it was the deadline.
bool wait_for_socket(PGconn* connection, int events, int64_t deadline_us, char* error,
                     bool* timed_out = nullptr) {
  if (timed_out != nullptr) *timed_out = false;
  for (;;) {
    if (ShutdownRequestPending && !client.releasing) {
      snprintf(error, kErrorSize, "the server is shutting down");
      return false;
    }
    const pgsocket socket = PQsocket(connection);
    if (socket == PGINVALID_SOCKET) {
      set_error(error, "lost the connection to the registry", PQerrorMessage(connection));
      return false;
    }
    const int64_t left_us = deadline_us - lease_clock_us();
    if (left_us <= 0) {
      snprintf(error, kErrorSize, "the registry did not answer within %d ms", request_timeout_ms());
      if (timed_out != nullptr) *timed_out = true;
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

// Opens a connection to snowflake.registry without blocking, by the deadline;
// nullptr with the reason in `error`.
PGconn* open_connection(int64_t deadline_us, char* error) {
  char timeout_seconds[16];
  snprintf(timeout_seconds, sizeof(timeout_seconds), "%d", (request_timeout_ms() + 999) / 1000);
  // The connection string comes after the defaults, so it may override them.
  const char* const keywords[] = {"fallback_application_name", "connect_timeout", "dbname",
                                  nullptr};
  const char* const values[] = {kWorkerName, timeout_seconds, settings.registry, nullptr};
  PGconn* connection = PQconnectStartParams(keywords, values, 1);
  if (connection == nullptr) {
    snprintf(error, kErrorSize, "could not connect to the registry: out of memory");
    return nullptr;
  }
  PostgresPollingStatusType status = PGRES_POLLING_WRITING;
  if (PQstatus(connection) == CONNECTION_BAD) status = PGRES_POLLING_FAILED;
  while (status != PGRES_POLLING_OK) {
    if (status == PGRES_POLLING_FAILED) {
      set_error(error, "could not connect to the registry", PQerrorMessage(connection));
      PQfinish(connection);
      return nullptr;
    }
    const int events = status == PGRES_POLLING_READING ? WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE;
    if (!wait_for_socket(connection, events, deadline_us, error)) {
      PQfinish(connection);
      return nullptr;
    }
    status = PQconnectPoll(connection);
  }
  if (PQsetnonblocking(connection, 1) != 0) {
    set_error(error, "could not set up the registry connection", PQerrorMessage(connection));
    PQfinish(connection);
    return nullptr;
  }
  return connection;
}

// Sends one statement on `connection` and reads its result by the deadline,
// as run() says. `slow_us`: when the answer has not come by then (on
// lease_clock_us()), ask_what_blocks() is called once, and the wait goes on.
PGresult* run_on(PGconn* connection, const char* sql, int count, const char* const* parameters,
                 int64_t deadline_us, int64_t slow_us, char* error) {
  const int64_t started_us = lease_clock_us();
  if (!PQsendQueryParams(connection, sql, count, nullptr, parameters, nullptr, nullptr, 0)) {
    set_error(error, "could not send a statement to the registry", PQerrorMessage(connection));
    return nullptr;
  }
  for (;;) {
    const int flushed = PQflush(connection);
    if (flushed == 0) break;
    if (flushed < 0 || !wait_for_socket(connection, WL_SOCKET_WRITEABLE, deadline_us, error)) {
      if (flushed < 0)
        set_error(error, "could not send to the registry", PQerrorMessage(connection));
      return nullptr;
    }
  }
  PGresult* result = nullptr;
  for (;;) {
    while (PQisBusy(connection)) {
      const bool watching = slow_us < deadline_us;
      bool timed_out = false;
      if (!wait_for_socket(connection, WL_SOCKET_READABLE, watching ? slow_us : deadline_us, error,
                           &timed_out)) {
        if (watching && timed_out) {
          ask_what_blocks(sql, PQbackendPID(connection), started_us, deadline_us);
          slow_us = deadline_us;
          continue;
        }
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

// Notices the registry sends during a statement of the worker's own
// connection. A commit whose wait for the synchronous standbys was canceled
// (pg_cancel_backend, or a statement_timeout someone set around it) still
// answers, with a WARNING from SyncRepWaitForLSN (the source function, which
// no lc_messages translates): the registry committed the claim locally, and
// its standbys may not have it. run() does not count such an answer.
// Any other notice goes to the server log.
void note_notice(void*, const PGresult* notice) {
  const char* function = PQresultErrorField(notice, PG_DIAG_SOURCE_FUNCTION);
  char message[kErrorSize];
  copy_printable(message, sizeof(message), PQresultErrorMessage(notice));
  if (function != nullptr && strcmp(function, "SyncRepWaitForLSN") == 0) {
    client.unconfirmed = true;
    strlcpy(client.unconfirmed_message, message, sizeof(client.unconfirmed_message));
  } else {
    ereport(LOG, (errmsg("snowflake registry: the registry says: %s", message)));
  }
}

}  // namespace

// For connecting and for each statement (also the registry's statement_timeout):
// registry_round::request_timeout_ms, and a second at most for the release.
int request_timeout_ms() {
  const int timeout_ms =
      static_cast<int>(registry_round::request_timeout_ms(settings.registry_lease_ms));
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

void describe_server(char* out, size_t size) {
  if (client.connection == nullptr) {
    strlcpy(out, "not connected", size);
    return;
  }
  char server[kHostSize];
  snprintf(server, sizeof(server), "%s:%s", PQhost(client.connection), PQport(client.connection));
  copy_printable(out, size, server);
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
  const int64_t started_us = lease_clock_us();
  const int64_t deadline_us = started_us + int64_t{request_timeout_ms()} * 1000;
  // A request slower than this is asked about (stall.cpp), unless it is the
  // release at shutdown.
  const int64_t slow_us =
      client.releasing
          ? deadline_us
          : started_us + std::min<int64_t>(kSlowRequestMs, request_timeout_ms() / 2) * 1000;
  client.unconfirmed = false;
  PGresult* result = run_on(client.connection, sql, count, parameters, deadline_us, slow_us, error);
  bool slow = slow_us < deadline_us && lease_clock_us() >= slow_us;
  if (result != nullptr && client.unconfirmed) {
    PQclear(result);
    result = nullptr;
    snprintf(error, kErrorSize,
             "the registry committed the request locally but its synchronous standbys did not "
             "confirm it (%s): not counted",
             client.unconfirmed_message);
    slow = true;  // the registry's wait goes on, if only for the next request
  }
  request_ended(sql, result != nullptr, slow);
  return result;
}

PGresult* ask_beside(const char* sql, int count, const char* const* parameters, int64_t deadline_us,
                     char* error) {
  if (client.connection == nullptr) {
    snprintf(error, kErrorSize, "not connected");
    return nullptr;
  }
  PGconn* beside = open_connection(deadline_us, error);
  if (beside == nullptr) return nullptr;
  // A connection string that lists several hosts may reach another server.
  if (strcmp(PQhost(beside), PQhost(client.connection)) != 0 ||
      strcmp(PQport(beside), PQport(client.connection)) != 0) {
    snprintf(error, kErrorSize, "the second connection reached another server (%s:%s)",
             PQhost(beside), PQport(beside));
    PQfinish(beside);
    return nullptr;
  }
  PGresult* result = run_on(beside, sql, count, parameters, deadline_us, deadline_us, error);
  PQfinish(beside);
  return result;
}

// Connects, bounds the registry's statement and lock waits, pins the
// session's synchronous_commit to on (a registry with synchronous standbys
// then waits for them for every claim and renewal, whatever the role's or the
// database's default: durability.cpp) and its search_path to pg_catalog,
// and resolves the table. Only the first
// statement runs under the connection's own search_path (options=-csearch_path=
// in snowflake.registry, or the role's or database's): it names pg_catalog's
// functions with their schema, has no operator, and reads the path's schemas
// (current_schemas). Under pg_catalog alone then, the table is the first
// snowflake_registry of those schemas that the registry may trust: its schema
// and its owner each the registry's role (current_user), the database's owner
// (pg_database_owner too) or a superuser. A table of that name that another
// role planted, in a schema of its own that the path finds first (one named
// after the registry's role: "$user"), is never used. With none, it is created
// in the first trusted schema of the path. A table of 1.6 or earlier gets the
// columns of 1.7, if this role may (it owns it), else the error says what its
// owner must run. Every later statement names the table with its schema.
bool connect_registry(char* error) {
  const int64_t deadline_us = lease_clock_us() + int64_t{request_timeout_ms()} * 1000;
  client.connection = open_connection(deadline_us, error);
  if (client.connection == nullptr) {
    request_ended(nullptr, false, false);
    return false;
  }
  client.connected_to = strdup(settings.registry);
  PQsetNoticeReceiver(client.connection, note_notice, nullptr);

  char timeout[32];
  snprintf(timeout, sizeof(timeout), "%dms", request_timeout_ms());
  const char* const timeouts[] = {timeout};
  PGresult* result =
      run("SELECT pg_catalog.set_config('statement_timeout', $1::pg_catalog.text, false),\n"
          "    pg_catalog.set_config('lock_timeout', $1::pg_catalog.text, false),\n"
          "    pg_catalog.current_schemas(false),\n"
          "    pg_catalog.set_config('synchronous_commit', 'on', false)",
          1, timeouts, error);
  if (result == nullptr) {
    disconnect();
    return false;
  }
  char* schemas = pstrdup(PQntuples(result) == 1 ? PQgetvalue(result, 0, 2) : "{}");
  PQclear(result);
  result =
      run("SELECT pg_catalog.set_config('search_path', 'pg_catalog', false)", 0, nullptr, error);
  if (result == nullptr) {
    disconnect();
    return false;
  }
  PQclear(result);

  // Tables of the name in the path's schemas (kind 1), then the schemas
  // (kind 2), in the path's order; whether each is trusted, and its owner.
  const char* const names[] = {schemas, kTable};
  result = run(
      "WITH path AS (\n"
      "  SELECT n.oid, n.nspname, n.nspowner, p.position\n"
      "    FROM unnest($1::name[]) WITH ORDINALITY AS p(name, position)\n"
      "    JOIN pg_namespace n ON n.nspname = p.name),\n"
      "trusted AS (\n"
      "  SELECT oid FROM pg_roles WHERE rolsuper OR rolname = current_user\n"
      "  UNION ALL SELECT datdba FROM pg_database WHERE datname = current_database()\n"
      "  UNION ALL SELECT to_regrole('pg_database_owner')::oid)\n"
      "SELECT 1, path.position,\n"
      "    quote_ident(path.nspname::text) || '.' || quote_ident(c.relname::text),\n"
      "    path.nspowner IN (SELECT oid FROM trusted) AND c.relowner IN (SELECT oid FROM "
      "trusted),\n"
      "    pg_get_userbyid(path.nspowner)::text || ', ' || pg_get_userbyid(c.relowner)::text\n"
      "  FROM path JOIN pg_class c ON c.relnamespace = path.oid AND c.relname = $2::name\n"
      "UNION ALL\n"
      "SELECT 2, path.position, quote_ident(path.nspname::text) || '.' || quote_ident($2::text),\n"
      "    path.nspowner IN (SELECT oid FROM trusted), pg_get_userbyid(path.nspowner)::text\n"
      "  FROM path\n"
      "ORDER BY 1, 2",
      2, names, error);
  pfree(schemas);
  if (result == nullptr) {
    disconnect();
    return false;
  }
  int table = -1, ignored = -1, schema = -1;
  for (int i = 0; i < PQntuples(result); i++) {
    const bool is_table = strcmp(PQgetvalue(result, i, 0), "1") == 0;
    const bool trusted = strcmp(PQgetvalue(result, i, 3), "t") == 0;
    if (is_table && trusted && table < 0) table = i;
    if (is_table && !trusted && table < 0 && ignored < 0) ignored = i;
    if (!is_table && trusted && schema < 0) schema = i;
  }
  if (ignored >= 0 && table >= 0) {
    ereport(LOG, (errmsg("snowflake registry: ignoring the table %s, earlier in the registry's "
                         "search_path than %s",
                         PQgetvalue(result, ignored, 2), PQgetvalue(result, table, 2)),
                  errdetail("Its schema and its owner (%s) are not all the registry's role, the "
                            "database's owner or a superuser: another role may have planted it.",
                            PQgetvalue(result, ignored, 4))));
  } else if (ignored >= 0) {
    char ignored_text[2 * NAMEDATALEN * 2 + 8], owners[2 * NAMEDATALEN + 8];
    strlcpy(ignored_text, PQgetvalue(result, ignored, 2), sizeof(ignored_text));
    strlcpy(owners, PQgetvalue(result, ignored, 4), sizeof(owners));
    PQclear(result);
    snprintf(error, kErrorSize,
             "the registry table %s is not used: its schema's and its owners (%s) are not all the "
             "registry's role, the database's owner or a superuser; have one of them own the "
             "schema and the table",
             ignored_text, owners);
    disconnect();
    return false;
  }
  if (table >= 0 || schema >= 0)
    strlcpy(client.table, PQgetvalue(result, table >= 0 ? table : schema, 2), sizeof(client.table));
  PQclear(result);
  if (table < 0 && schema < 0) {
    snprintf(error, kErrorSize,
             "the registry has no table %s in the search_path, and no schema in the search_path "
             "to create it in (owned by the registry's role, the database's owner or a superuser)",
             kTable);
    disconnect();
    return false;
  }
  if (table < 0) {
    result = run(with_table(kCreateTable), 0, nullptr, error);
    if (result == nullptr) {
      disconnect();
      return false;
    }
    PQclear(result);
  }

  // A table of 1.6 or earlier: the columns of 1.7.
  const char* const qualified[] = {client.table};
  result =
      run("SELECT count(*) FROM pg_attribute\n"
          "  WHERE attrelid = $1::regclass::oid AND attname IN ('token', 'released') AND NOT "
          "attisdropped",
          1, qualified, error);
  if (result == nullptr) {
    disconnect();
    return false;
  }
  const bool complete = strcmp(PQgetvalue(result, 0, 0), "2") == 0;
  PQclear(result);
  if (!complete) {
    result = run(with_table(kAddColumns), 0, nullptr, error);
    if (result == nullptr) {
      char reason[kErrorSize];
      strlcpy(reason, error, sizeof(reason));
      snprintf(error, kErrorSize,
               "the registry table %s has no columns token and released (it was made by snowflake "
               "1.6 or earlier) and this role may not add them; as its owner, run: %s (%s)",
               client.table, with_table(kAddColumns), reason);
      disconnect();
      return false;
    }
    PQclear(result);
    ereport(LOG, (errmsg("snowflake registry: added the columns token and released to the registry "
                         "table %s",
                         client.table)));
  }
  return true;
}

}  // namespace snowflake::pg::registry
