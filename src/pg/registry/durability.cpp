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
//   - at every connection and then every lease (at most once a minute:
//     src/core/registry_round.hpp) the worker asks the registry whether it is in recovery, its
//     synchronous_standby_names, how many standbys stream from it (the rows of
//     pg_stat_replication, which any role sees, their columns masked), and,
//     where the role may execute them, its pg_control_system()'s system
//     identifier and its timeline (its WAL file's name, else its last
//     checkpoint's). Standbys streaming
//     with none synchronous ("asynchronous standbys") is a WARNING, once per
//     change, and shows in snowflake_registry_status;
//   - its system identifier and timeline are kept in the View's facts, where
//     history.cpp compares them (with the registry table's OID) with what the
//     node remembers: a change of the registry's history.
//
// What it cannot see: which standby a failover will promote when some stream
// synchronously and others not. (What a change of the registry's history
// does, and what the nodes cannot see of it: history.cpp.)
#include "durability.hpp"

#include <cctype>

#include "../settings.hpp"
#include "../text.hpp"
#include "client.hpp"

namespace snowflake::pg::registry {

namespace {

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
