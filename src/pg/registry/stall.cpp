// Stalled claims and renewals: what the registry waits for before it answers.
//
// A registry with synchronous_standby_names set commits each claim and
// renewal locally, then waits (wait event SyncRep) until enough of the
// standbys it names confirm it; only then does it answer. With too few of them
// streaming (the one standby it names stopped), it waits until one is back:
// the worker's request times out (a quarter of the lease, at most 10 s) and
// is retried every second, none is confirmed, and the node refuses IDs 0.9 of
// a lease after its last confirmed renewal. Nothing times the registry's
// session out meanwhile (a commit's wait is under no statement_timeout): it
// waits on after the worker gave up, its row locked, so the next attempts wait
// behind it for the lock. The registry is reachable and answers every other
// statement, so nothing in the worker's own errors says why.
//
// So when a statement has had no answer for a second (half the request
// timeout, if shorter), the worker asks the registry on a second, short-lived
// connection what the session serving it waits for: pg_stat_activity shows a
// role the wait events of its own sessions, and pg_blocking_pids() who holds
// the lock it waits for. The wait event SyncRep, of that session or of the
// one holding its row's lock, is "synchronous standbys"; any other wait is
// shown as its type and event ("Lock: transactionid"). The finding goes to
// snowflake_registry_status (registry_waits_for, and registry_waiting_since:
// when the first stalled request was sent), with a WARNING once per cause
// that says how long the lease has left, before it runs out. An answer to the
// statement found waiting (the claim's text, the same at every attempt) ends
// it, and a LOG line says after how long; so does a failure that was quick
// (the registry is then unreachable or refusing, and last_error says so) and
// a question that finds no wait. The reads the worker runs before each claim
// are answered while commits wait, and change nothing.
//
// A wait canceled on the registry (pg_cancel_backend) answers with a WARNING
// and a commit its standbys may not have: client.cpp does not count it.
#include "stall.hpp"

extern "C" {
#include "common/hashfn.h"
}

#include "../settings.hpp"
#include "../text.hpp"
#include "client.hpp"

namespace snowflake::pg::registry {

namespace {

constexpr char kSynchronousStandbys[] = "synchronous standbys";

View* watched = nullptr;
void (*publish_watched)() = nullptr;
// The text of the statement found waiting (a hash of it), 0 if none.
uint64 waiting_statement = 0;

uint64 statement_hash(const char* sql) {
  return hash_bytes_extended(reinterpret_cast<const unsigned char*>(sql),
                             static_cast<int>(strlen(sql)), 0) |
         1;
}

// Process $1's wait, and that of the process holding the lock it waits for
// (one waiting for SyncRep first); the standbys streaming, if the role may
// read pg_stat_replication (%s: the probe found it readable, durability.cpp).
// Names are schema-qualified and operators pg_catalog's: the second
// connection's search_path is the role's own.
constexpr char kAskWait[] =
    "SELECT a.wait_event_type, a.wait_event, b.pid, b.wait_event_type, b.wait_event,\n"
    "    pg_catalog.current_setting('synchronous_standby_names'), %s\n"
    "  FROM pg_catalog.pg_stat_activity a\n"
    "  LEFT JOIN LATERAL (\n"
    "    SELECT w.pid, w.wait_event_type, w.wait_event FROM pg_catalog.pg_stat_activity w\n"
    "      WHERE w.pid OPERATOR(pg_catalog.=) ANY (pg_catalog.pg_blocking_pids(a.pid))\n"
    "      ORDER BY coalesce(w.wait_event OPERATOR(pg_catalog.=) 'SyncRep', false) DESC\n"
    "      LIMIT 1) b ON true\n"
    "  WHERE a.pid OPERATOR(pg_catalog.=) $1::pg_catalog.int4";

const char* field(const PGresult* result, int column) {
  return PQgetisnull(result, 0, column) ? "" : PQgetvalue(result, 0, column);
}

void forget_wait() {
  RegistryFacts& facts = watched->registry;
  waiting_statement = 0;
  if (facts.waits_for[0] == '\0') return;
  facts.waits_for[0] = '\0';
  facts.waiting_since = 0;
  publish_watched();
}

// What the node may still do without a confirmed renewal, for the DETAIL.
const char* lease_left(const View& view) {
  const int64_t left_us = view.valid_until_us - lease_clock_us();
  if (view.state != State::kHeld || left_us <= 0)
    return "This node holds no valid lease: it issues no IDs until a claim is confirmed.";
  return psprintf("This node issues IDs for %lld ms more without a confirmed renewal.",
                  static_cast<long long>(left_us / 1000));
}

void warn(const View& view, int64_t waited_ms, const PGresult* result, bool synchronous) {
  const char* request = view.state == State::kHeld ? "renewal" : "claim";
  char server[kHostSize];
  describe_server(server, sizeof(server));
  const char* standby_names = field(result, 5);
  const int streaming = PQgetisnull(result, 0, 6) ? -1 : atoi(PQgetvalue(result, 0, 6));
  const char* standbys = streaming < 0
                             ? ""
                             : psprintf(streaming == 1 ? ", and %d standby streams from it"
                                                       : ", and %d standbys stream from it",
                                        streaming);
  const bool behind = !PQgetisnull(result, 0, 2);
  if (synchronous) {
    const bool direct = strcmp(field(result, 1), "SyncRep") == 0;
    ereport(WARNING,
            (errmsg("the snowflake registry has not confirmed this node's %s for %lld ms: it "
                    "waits for its synchronous standbys",
                    request, static_cast<long long>(waited_ms)),
             direct ? errdetail("The registry (%s) committed the %s locally and waits for the "
                                "standbys of synchronous_standby_names ('%s') to confirm it "
                                "(wait event SyncRep)%s. %s",
                                server, request, standby_names, standbys, lease_left(view))
                    : errdetail("The registry (%s) holds the %s behind another claim or renewal "
                                "of its row (registry process %s), which it committed locally "
                                "and which waits for the standbys of synchronous_standby_names "
                                "('%s') to confirm it (wait event SyncRep)%s. %s",
                                server, request, field(result, 2), standby_names, standbys,
                                lease_left(view)),
             errhint("Start a standby that synchronous_standby_names names, or restore its "
                     "connection to the registry: the waiting renewals are confirmed once it "
                     "streams. With two standbys and synchronous_standby_names = 'ANY 1 (s1, "
                     "s2)', the registry keeps confirming when one is lost; see \"The registry "
                     "database\" in doc/registry.md.")));
    return;
  }
  ereport(WARNING,
          (errmsg("the snowflake registry has not answered this node's %s for %lld ms: its "
                  "session waits for %s",
                  request, static_cast<long long>(waited_ms), view.registry.waits_for),
           behind ? errdetail("The registry's (%s) process serving it waits (wait event type %s, "
                              "wait event %s) behind its process %s (wait event type %s, wait "
                              "event %s). %s",
                              server, field(result, 0), field(result, 1), field(result, 2),
                              field(result, 3), field(result, 4), lease_left(view))
                  : errdetail("The registry's (%s) process serving it waits (wait event type %s, "
                              "wait event %s). %s",
                              server, field(result, 0), field(result, 1), lease_left(view)),
           errhint("Look at the registry's sessions of this role (pg_stat_activity, pg_locks). "
                   "The node gives the %s up after %d ms and tries again every second.",
                   request, request_timeout_ms())));
}

}  // namespace

void watch_slow_requests(View* view, void (*publish)()) {
  watched = view;
  publish_watched = publish;
  // A new worker asks again; its View may keep what an earlier one found.
  view->registry.waits_for[0] = '\0';
  view->registry.waiting_since = 0;
}

void ask_what_blocks(const char* sql, int backend_pid, int64_t sent_us, int64_t deadline_us) {
  if (watched == nullptr) return;
  char pid[16];
  snprintf(pid, sizeof(pid), "%d", backend_pid);
  const char* const parameters[] = {pid};
  const char* ask =
      psprintf(kAskWait, watched->registry.standbys >= 0 ? "(SELECT pg_catalog.count(*) FROM "
                                                           "pg_catalog.pg_stat_replication)"
                                                         : "NULL::pg_catalog.int8");
  char error[kErrorSize];
  PGresult* result = ask_beside(ask, 1, parameters, deadline_us, error);
  if (result == nullptr) {
    // No answer on a second connection either: what was known stays.
    ereport(DEBUG1,
            (errmsg("snowflake registry: could not ask what a slow request waits for: %s", error)));
    return;
  }
  if (PQntuples(result) != 1 || PQgetisnull(result, 0, 1)) {
    // Answered meanwhile, or running: it waits for nothing.
    PQclear(result);
    forget_wait();
    return;
  }
  const bool synchronous =
      strcmp(field(result, 1), "SyncRep") == 0 ||
      (strcmp(field(result, 0), "Lock") == 0 && strcmp(field(result, 4), "SyncRep") == 0);
  char waits_for[kWaitSize];
  if (synchronous) {
    strlcpy(waits_for, kSynchronousStandbys, sizeof(waits_for));
  } else {
    char event[kWaitSize];
    snprintf(event, sizeof(event), "%s: %s", field(result, 0), field(result, 1));
    copy_printable(waits_for, sizeof(waits_for), event);
  }
  waiting_statement = statement_hash(sql);
  RegistryFacts& facts = watched->registry;
  if (strcmp(facts.waits_for, waits_for) == 0 && facts.waiting_since != 0) {
    PQclear(result);
    return;  // the same wait goes on: said already
  }
  const int64_t waited_us = lease_clock_us() - sent_us;
  strlcpy(facts.waits_for, waits_for, sizeof(facts.waits_for));
  facts.waiting_since = GetCurrentTimestamp() - waited_us;
  publish_watched();
  warn(*watched, waited_us / 1000, result, synchronous);
  PQclear(result);
}

void request_ended(const char* sql, bool answered, bool slow) {
  if (watched == nullptr || watched->registry.waits_for[0] == '\0') return;
  if (!answered && slow) return;  // still waiting: the next attempt asks again
  if (answered) {
    if (sql == nullptr || statement_hash(sql) != waiting_statement) return;
    const RegistryFacts& facts = watched->registry;
    ereport(LOG,
            (errmsg("snowflake registry: the registry answers again, after %lld ms of "
                    "waiting for %s",
                    static_cast<long long>((GetCurrentTimestamp() - facts.waiting_since) / 1000),
                    facts.waits_for)));
  }
  forget_wait();
}

}  // namespace snowflake::pg::registry
