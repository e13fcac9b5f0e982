// Durability: what the registry can lose of what it acknowledged. The
// protocol rests on the registry keeping every claim and renewal it
// acknowledged (doc/registry.md, "What it must keep"): a node issues up to the
// ids_before the registry accepted from it, and a node that takes an identity
// over starts above the ids_before it reads there. A registry that fails over
// to an asynchronous standby hands rows back in an older state, and a takeover
// may then start below IDs already issued. The nodes cannot make a registry
// keep its commits; they do what a client can, and say what they see:
//   - the worker's session commits with synchronous_commit = on (client.cpp
//     pins it), so a registry whose synchronous standbys are configured waits
//     for them for every claim and renewal, whatever the role's or database's
//     default;
//   - at every connection and then every lease (at most once a minute) the
//     worker asks the registry whether it is in recovery, its
//     synchronous_standby_names, how many standbys stream from it (the rows of
//     pg_stat_replication, which any role sees, their columns masked), and,
//     where the role may execute them, its pg_control_system()'s system
//     identifier and its timeline (its WAL file's name, else its last
//     checkpoint's). Standbys streaming
//     with none synchronous ("asynchronous standbys") is a WARNING, once per
//     change, and shows in snowflake_registry_status;
//   - another system identifier or timeline than the last probe's of the same
//     snowflake.registry is a WARNING too: the registry failed over or was
//     restored since, and what it says now is trusted only as far as it kept
//     its commits; the claims that follow start above a floor (below).
// After a change of history. The registry may have forgotten renewals it
// acknowledged before: a row that looks expired or stale while its holder
// still issues under the lease it renewed, with an ids_before below that
// holder's last. Every renewal it forgot was acknowledged before this worker
// saw the change, so that holder's IDs lie below (the time the change was
// seen) + (its lease) + (its snowflake.max_lead) + 1 ms, on clocks in step.
// So from then on, every identity this node claims other than by renewing
// the lease it holds (a takeover, a new claim, its own identity claimed back)
// starts at least there, the registry's longest lease (at most an hour) and
// this node's max_lead standing for the holder's (worker.cpp, record_claim).
// It only raises floors; once that time has passed it changes nothing. It
// covers the nodes that saw the change, not a holder renewing a row whose
// takeover the registry forgot, nor a node that first reaches the registry
// after the change.
//
// What it cannot see: a registry restored to an earlier point on the same
// timeline (a file-system snapshot started as is), a failover that happened
// while this node was down or not yet connected (the probes compare within
// one running server), and which standby a failover will promote when some
// stream synchronously and others not.
#include "durability.hpp"

#include <algorithm>
#include <cctype>

#include "../../core/clock.hpp"
#include "../settings.hpp"
#include "../text.hpp"
#include "client.hpp"

namespace snowflake::pg::registry {

namespace {

constexpr int64_t kLongestProbeIntervalUs = 60 * 1000 * 1000;
constexpr int64_t kLongestLeaseMs = 60 * 60 * 1000;

bool blank(const char* text) {
  for (const char* p = text; *p != '\0'; p++)
    if (!isspace(static_cast<unsigned char>(*p))) return false;
  return true;
}

// A synchronous standby is waited for only under these (the worker pins on).
bool waits_for_standbys(const char* synchronous_commit) {
  return strcmp(synchronous_commit, "on") == 0 || strcmp(synchronous_commit, "remote_apply") == 0 ||
         strcmp(synchronous_commit, "remote_write") == 0;
}

Durability classify(bool in_recovery, const char* standby_names, const char* synchronous_commit,
                    int standbys) {
  if (in_recovery) return Durability::kInRecovery;
  if (!blank(standby_names) && waits_for_standbys(synchronous_commit))
    return Durability::kSynchronous;
  if (standbys < 0) return Durability::kUnknown;
  return standbys == 0 ? Durability::kNoStandby : Durability::kAsynchronous;
}

void log_durability(Durability before, const RegistryFacts& facts, const char* server) {
  if (facts.durability == before) return;
  if (facts.durability == Durability::kAsynchronous) {
    ereport(
        WARNING,
        (errmsg_plural("the snowflake registry can lose the leases it acknowledged: %d standby "
                       "streams from it, not synchronously",
                       "the snowflake registry can lose the leases it acknowledged: %d standbys "
                       "stream from it, none synchronously",
                       facts.standbys, facts.standbys),
         errdetail("The registry (%s) has an empty synchronous_standby_names. A failover to "
                   "one of its standbys may lose the last claims and renewals; a node that "
                   "then takes an identity over may start below IDs already issued.",
                   server),
         errhint("Configure synchronous_standby_names on the registry (with Patroni: "
                 "synchronous_mode), or use a registry without asynchronous standbys; see "
                 "\"What it must keep\" in doc/registry.md.")));
  } else if (before == Durability::kAsynchronous) {
    ereport(LOG,
            (errmsg("snowflake registry: the registry (%s) is now %s", server,
                    durability_name(facts.durability) != nullptr ? durability_name(facts.durability)
                                                                 : "of unknown durability")));
  }
}

// The longest lease of the registry's rows (ms), at most an hour (the
// longest snowflake.registry_lease); 0 if none.
bool longest_lease(int64_t* lease_ms, char* error) {
  PGresult* result =
      run(with_table("SELECT (extract(epoch FROM max(expires_at - renewed_at))::numeric\n"
                     "    * 1000::numeric)::bigint\n"
                     "  FROM {table} WHERE isfinite(expires_at) AND isfinite(renewed_at)"),
          0, nullptr, error);
  if (result == nullptr) return false;
  *lease_ms = PQgetisnull(result, 0, 0) ? 0 : strtoll(PQgetvalue(result, 0, 0), nullptr, 10);
  *lease_ms = std::clamp<int64_t>(*lease_ms, 0, kLongestLeaseMs);
  PQclear(result);
  return true;
}

}  // namespace

const char* durability_name(Durability durability) {
  switch (durability) {
    case Durability::kSynchronous:
      return "synchronous";
    case Durability::kNoStandby:
      return "no standby";
    case Durability::kAsynchronous:
      return "asynchronous standbys";
    case Durability::kInRecovery:
      return "in recovery";
    case Durability::kUnknown:
      break;
  }
  return nullptr;
}

int64_t probe_interval_us() {
  return std::min<int64_t>(int64_t{settings.registry_lease_ms} * 1000, kLongestProbeIntervalUs);
}

bool probe_durability(RegistryFacts* facts, char* error) {
  // What this role may read: a function it may not execute fails the
  // statement that names it, whether or not it is called (pg_walfile_name and
  // pg_current_wal_lsn are 10's: the statements run on 9.6 too).
  PGresult* result =
      run("SELECT has_table_privilege('pg_catalog.pg_stat_replication', 'SELECT'),\n"
          "    has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE'),\n"
          "    has_function_privilege('pg_catalog.pg_control_checkpoint()', 'EXECUTE'),\n"
          "    coalesce(has_function_privilege(\n"
          "        to_regprocedure('pg_catalog.pg_current_wal_lsn()'), 'EXECUTE')\n"
          "      AND has_function_privilege(\n"
          "        to_regprocedure('pg_catalog.pg_walfile_name(pg_catalog.pg_lsn)'), 'EXECUTE'),\n"
          "      false)",
          0, nullptr, error);
  if (result == nullptr) return false;
  const bool replication = strcmp(PQgetvalue(result, 0, 0), "t") == 0;
  const bool system = strcmp(PQgetvalue(result, 0, 1), "t") == 0;
  const bool checkpoint = strcmp(PQgetvalue(result, 0, 2), "t") == 0;
  const bool wal = strcmp(PQgetvalue(result, 0, 3), "t") == 0;
  PQclear(result);
  // The timeline: a primary's current one is its WAL file's (the first 8 hex
  // digits), exact at once after a promotion; the last checkpoint's lags
  // until the checkpoint that follows it.
  const char* timeline_sql =
      wal          ? "CASE WHEN pg_is_in_recovery() THEN NULL::bigint ELSE\n"
                     "      ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint\n"
                     "    END"
      : checkpoint ? "(SELECT timeline_id::bigint FROM pg_control_checkpoint())"
                   : "NULL::bigint";
  const char* sql = psprintf(
      "SELECT pg_is_in_recovery(), current_setting('synchronous_standby_names'),\n"
      "    current_setting('synchronous_commit'), %s, %s, %s",
      replication ? "(SELECT count(*) FROM pg_stat_replication)" : "NULL::bigint",
      system ? "(SELECT system_identifier::text FROM pg_control_system())" : "NULL::text",
      timeline_sql);
  result = run(sql, 0, nullptr, error);
  if (result == nullptr) return false;
  if (PQntuples(result) != 1) {
    PQclear(result);
    snprintf(error, kErrorSize, "the registry's probe of its durability returned no row");
    return false;
  }
  const bool in_recovery = strcmp(PQgetvalue(result, 0, 0), "t") == 0;
  const int standbys = PQgetisnull(result, 0, 3)
                           ? -1
                           : static_cast<int>(strtol(PQgetvalue(result, 0, 3), nullptr, 10));
  char system_identifier[kSystemIdentifierSize] = "";
  if (!PQgetisnull(result, 0, 4))
    copy_printable(system_identifier, sizeof(system_identifier), PQgetvalue(result, 0, 4));
  const int64 timeline =
      PQgetisnull(result, 0, 5) ? 0 : strtoll(PQgetvalue(result, 0, 5), nullptr, 10);
  const Durability durability =
      classify(in_recovery, PQgetvalue(result, 0, 1), PQgetvalue(result, 0, 2), standbys);
  PQclear(result);

  char server[kHostSize];
  describe_server(server, sizeof(server));
  // Its history: compared only when both probes could read it.
  const bool other_system = system_identifier[0] != '\0' && facts->system_identifier[0] != '\0' &&
                            strcmp(system_identifier, facts->system_identifier) != 0;
  const bool other_timeline = timeline != 0 && facts->timeline != 0 && timeline != facts->timeline;
  if (other_system || other_timeline) {
    facts->history_changed_at = GetCurrentTimestamp();
    int64_t longest_lease_ms = 0;
    if (!longest_lease(&longest_lease_ms, error)) return false;
    facts->history_floor_ms = unix_time_ms() +
                              std::max<int64_t>(longest_lease_ms, settings.registry_lease_ms) +
                              settings.max_lead_ms + 1;
    ereport(WARNING,
            (errmsg("the snowflake registry's history changed: it is system identifier %s, "
                    "timeline %lld, and was system identifier %s, timeline %lld",
                    system_identifier[0] != '\0' ? system_identifier : "(unknown)",
                    static_cast<long long>(timeline), facts->system_identifier,
                    static_cast<long long>(facts->timeline)),
             errdetail("The registry (%s) failed over or was restored since this node last asked "
                       "it. Its leases and the floors read from it (ids_before) are trusted only "
                       "as far as it kept the commits it acknowledged before.",
                       server),
             errhint("If it failed over to an asynchronous standby or was restored to an earlier "
                     "point, a node that takes an identity over may start below IDs already "
                     "issued; see \"What it must keep\" in doc/registry.md. This node starts "
                     "every identity it claims from now on at %s or later.",
                     timestamp_text(timestamptz_from_unix_ms(facts->history_floor_ms)))));
  }
  if (system_identifier[0] != '\0')
    strlcpy(facts->system_identifier, system_identifier, sizeof(facts->system_identifier));
  if (timeline != 0) facts->timeline = timeline;
  const Durability before = facts->durability;
  facts->durability = durability;
  facts->standbys = standbys;
  log_durability(before, *facts, server);
  return true;
}

}  // namespace snowflake::pg::registry
