// The differential test of the registry's statements: the claim, release and
// pick SQL the worker runs (src/pg/registry/statements.hpp, the same text) in
// a real PostgreSQL, against their pure version (src/core/registry_row.hpp),
// which the simulator's registry runs, on the same random rows and requests.
// Each case runs in a transaction that is rolled back; now() is read in it
// first, so both sides see the same registry clock. The session's
// search_path is pg_catalog, as the worker's.
//
//   snowflake_differential 'host=/tmp port=5432 dbname=postgres' [cases] [seed]
#include <libpq-fe.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../src/pg/registry/statements.hpp"
#include "registry_row.hpp"
#include "rng.hpp"

using namespace snowflake;

namespace {

PGconn* connection = nullptr;

sim::Rng rng(1);
int64_t range(int64_t low, int64_t high) {
  return rng.range(low, high);
}

std::string with_table(const char* text) {
  std::string out = text;
  for (size_t at; (at = out.find("{table}")) != std::string::npos;)
    out.replace(at, 7, "public.snowflake_registry");
  return out;
}

PGresult* run(const std::string& sql, const std::vector<std::string>& parameters) {
  std::vector<const char*> values;
  for (const std::string& p : parameters) values.push_back(p.c_str());
  PGresult* result = PQexecParams(connection, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                  values.data(), nullptr, nullptr, 0);
  const ExecStatusType status = PQresultStatus(result);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    std::fprintf(stderr, "differential: %s\n%s\n", PQerrorMessage(connection), sql.c_str());
    std::exit(1);
  }
  return result;
}

int64_t value(PGresult* result, int column, int64_t null_value = -1) {
  return PQgetisnull(result, 0, column) ? null_value
                                        : std::strtoll(PQgetvalue(result, 0, column), nullptr, 10);
}

registry_row::Holder random_holder() {
  static const char* const systems[] = {"7001", "7002"};
  static const char* const hosts[] = {"a:5432", "b:5432"};
  static const char* const directories[] = {"/d", "/e"};
  // Tokens 0 (a row of 1.6) to 2: the same place from another postmaster is common.
  return registry_row::Holder{systems[range(0, 1)], range(1, 3), hosts[range(0, 1)],
                              directories[range(0, 1)], range(0, 2)};
}

// A time in µs: mostly whole ms (as the statements write), sometimes not.
int64_t random_time(int64_t around_us, int64_t spread_us) {
  const int64_t t = around_us + range(-spread_us, spread_us);
  return range(0, 3) == 0 ? t : t - t % 1000;
}

constexpr char kTime[] =
    "timestamptz 'epoch' + (%s::bigint / 1000000) * interval '1 second' + "
    "(%s::bigint %% 1000000) * interval '1 microsecond'";

std::string as_time(int index) {
  char text[256];
  const std::string p = "$" + std::to_string(index);
  std::snprintf(text, sizeof(text), kTime, p.c_str(), p.c_str());
  return text;
}

void insert(const registry_row::Row& row) {
  const std::string sql =
      with_table("INSERT INTO {table} VALUES (0, 0, $1::numeric, $2::bigint, $3, $4, 'c', ") +
      as_time(5) + ", " + as_time(6) + ", " + as_time(7) + ", " + as_time(8) + ", " +
      "CASE WHEN $9::bool THEN " + as_time(10) + " END, $11::bigint, $12::bool)";
  PQclear(run(sql, {row.holder.system_identifier, std::to_string(row.holder.timeline),
                    row.holder.host, row.holder.data_directory, std::to_string(row.claimed_at_us),
                    std::to_string(row.renewed_at_us), std::to_string(row.expires_at_us),
                    std::to_string(row.ids_before_us), row.has_inherited ? "true" : "false",
                    std::to_string(row.inherited_ids_before_us), std::to_string(row.holder.token),
                    row.released ? "true" : "false"}));
}

constexpr char kUs[] = "(extract(epoch FROM %s)::numeric * 1000000::numeric)::bigint";

registry_row::Row read_row() {
  std::string columns = "system_identifier::text, timeline, host, data_directory, token, released";
  for (const char* c :
       {"claimed_at", "renewed_at", "expires_at", "ids_before", "inherited_ids_before"}) {
    char text[128];
    std::snprintf(text, sizeof(text), kUs, c);
    columns += std::string(", ") + text;
  }
  PGresult* result = run(with_table(("SELECT " + columns + " FROM {table}").c_str()), {});
  registry_row::Row row;
  if (PQntuples(result) == 1) {
    row.exists = true;
    row.holder =
        registry_row::Holder{PQgetvalue(result, 0, 0), value(result, 1), PQgetvalue(result, 0, 2),
                             PQgetvalue(result, 0, 3), value(result, 4)};
    row.released = std::strcmp(PQgetvalue(result, 0, 5), "t") == 0;
    row.claimed_at_us = value(result, 6);
    row.renewed_at_us = value(result, 7);
    row.expires_at_us = value(result, 8);
    row.ids_before_us = value(result, 9);
    row.has_inherited = !PQgetisnull(result, 0, 10);
    row.inherited_ids_before_us = row.has_inherited ? value(result, 10) : 0;
  }
  PQclear(result);
  return row;
}

int failures = 0;
void check(bool same, uint64_t index, const char* what) {
  if (same) return;
  failures++;
  if (failures <= 10)
    std::printf("differential: case %llu: %s differs\n", static_cast<unsigned long long>(index),
                what);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: snowflake_differential CONNINFO [cases] [seed]\n");
    return 2;
  }
  const uint64_t cases = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 2000;
  rng = sim::Rng(argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1);
  connection = PQconnectdb(argv[1]);
  if (PQstatus(connection) != CONNECTION_OK) {
    std::fprintf(stderr, "differential: %s", PQerrorMessage(connection));
    return 1;
  }
  PQclear(run("SET client_min_messages = warning", {}));
  PQclear(run("SELECT pg_catalog.set_config('search_path', 'pg_catalog', false)", {}));
  PQclear(run(with_table("DROP TABLE IF EXISTS {table}"), {}));
  PQclear(run(with_table(pg::registry::kCreateTable), {}));
  PGresult* oid = run("SELECT 'public.snowflake_registry'::regclass::oid::bigint", {});
  const int64_t table_oid = value(oid, 0);
  PQclear(oid);
  uint64_t claims = 0, claimed = 0, taken = 0, releases = 0, released = 0, picks = 0, stale = 0;
  for (uint64_t i = 0; i < cases; i++) {
    PQclear(run("BEGIN", {}));
    PGresult* clock = run("SELECT (extract(epoch FROM now()) * 1000000)::bigint", {});
    const int64_t now = value(clock, 0);
    PQclear(clock);
    registry_row::Row row;
    if (range(0, 4) != 0) {
      row.exists = true;
      row.holder = random_holder();
      row.claimed_at_us = random_time(now - 60000000, 30000000);
      row.renewed_at_us = random_time(now - 10000000, 10000000);
      // Around now, and now itself: r.expires_at < now() against >= now().
      row.expires_at_us = range(0, 5) == 0 ? now : random_time(now, 5000000);
      row.ids_before_us = random_time(now, 60000000);
      row.has_inherited = range(0, 1) == 0;
      row.inherited_ids_before_us = row.has_inherited ? random_time(now, 60000000) : 0;
      row.released = range(0, 3) == 0;
      if (range(0, 2) == 0) {
        // A lease whose two thirds fall around now: stale or not, to the µs
        // (3 * (now - renewed_at) against 2 * lease).
        const int64_t lease_us = range(1000, 60000) * 1000 + range(0, 2);
        const int64_t edge = range(0, 1) == 0 ? range(-3, 3) : range(-lease_us / 3, lease_us / 3);
        row.renewed_at_us = now - (2 * lease_us) / 3 - edge;
        row.expires_at_us = row.renewed_at_us + lease_us;
      }
      insert(row);
    }
    // The row's own holder half the time, so that renewals and releases that
    // apply are common.
    const registry_row::Holder self = row.exists && range(0, 1) == 0 ? row.holder : random_holder();
    if (row.exists && range(0, 5) == 0) {
      // The pick's view of the row: live, released, stale.
      PGresult* result = run(with_table(pg::registry::kPick), {"0", "0", "0"});
      check(PQntuples(result) == 1, i, "the pick's rows");
      const bool live = std::strcmp(PQgetvalue(result, 0, 6), "t") == 0;
      const bool is_released = std::strcmp(PQgetvalue(result, 0, 8), "t") == 0;
      const bool is_stale = std::strcmp(PQgetvalue(result, 0, 9), "t") == 0;
      check(value(result, 7) == row.holder.token, i, "the pick's token");
      check(live == (row.expires_at_us >= now), i, "the pick's live");
      check(is_released == row.released, i, "the pick's released");
      check(is_stale == registry_row::stale(row, now), i, "the pick's stale");
      PQclear(result);
      picks++;
      stale += is_stale;
    } else if (range(0, 3) == 0) {
      // The release, over the renewal seen or another.
      const int64_t renewed = range(0, 1) == 0 ? row.renewed_at_us : random_time(now, 1000000);
      const int64_t ids_before_ms = (now + range(-5000000, 5000000)) / 1000;
      PGresult* result = run(with_table(pg::registry::kRelease),
                             {"0", "0", self.system_identifier, std::to_string(self.timeline),
                              self.host, self.data_directory, std::to_string(ids_before_ms),
                              std::to_string(renewed), std::to_string(self.token)});
      const bool applied = std::strcmp(PQcmdTuples(result), "1") == 0;
      PQclear(result);
      const bool pure = registry_row::release(row, self, renewed, ids_before_ms);
      releases++;
      released += applied;
      check(applied == pure, i, "whether the release applied");
      check(read_row() == row, i, "the row after the release");
    } else {
      registry_row::ClaimRequest request{
          self, range(1000, 60000), (now + range(-30000000, 60000000)) / 1000, range(1001, 70000)};
      PGresult* result =
          run(with_table(pg::registry::kClaim),
              {"0", "0", self.system_identifier, std::to_string(self.timeline), self.host,
               self.data_directory, "c", std::to_string(request.lease_ms),
               std::to_string(request.ids_before_ms), std::to_string(request.window_ms),
               std::to_string(self.token), "public.snowflake_registry"});
      check(PQntuples(result) == 1, i, "the number of answers");
      const registry_row::ClaimAnswer pure = registry_row::claim(row, request, now);
      const bool sql_claimed = std::strcmp(PQgetvalue(result, 0, 0), "t") == 0;
      check(sql_claimed == pure.claimed, i, "claimed");
      check(value(result, 8) == pure.inherited_ms, i, "the inherited ids_before");
      check(std::string(PQgetisnull(result, 0, 9) ? "" : PQgetvalue(result, 0, 9)) ==
                (pure.taken ? pure.taken_from : ""),
            i, "the host taken from");
      check(value(result, 10) == pure.ids_before_ms, i, "the answer's ids_before");
      check(value(result, 11) == table_oid, i, "the table's OID");
      check((std::strcmp(PQgetvalue(result, 0, 12), "t") == 0) == pure.existed, i,
            "whether the row existed");
      check(value(result, 13, 0) == pure.previous_renewed_at_us, i, "the row's renewed_at before");
      check(value(result, 14) == now, i, "the registry's clock");
      check(value(result, 5) == pure.row.claimed_at_us &&
                value(result, 6) == pure.row.renewed_at_us &&
                value(result, 7) == pure.row.expires_at_us &&
                value(result, 2) == pure.row.holder.timeline &&
                pure.row.holder.host == PQgetvalue(result, 0, 3),
            i, "the row the answer shows");
      PQclear(result);
      check(read_row() == row, i, "the row after the claim");
      claims++;
      claimed += pure.claimed;
      taken += pure.taken;
    }
    PQclear(run("ROLLBACK", {}));
  }
  PQclear(run(with_table("DROP TABLE {table}"), {}));
  PQfinish(connection);
  std::printf(
      "differential: %llu cases: %llu claims (%llu claimed, %llu taken over), %llu "
      "releases (%llu applied), %llu picks (%llu stale rows); %d difference(s)\n",
      static_cast<unsigned long long>(cases), static_cast<unsigned long long>(claims),
      static_cast<unsigned long long>(claimed), static_cast<unsigned long long>(taken),
      static_cast<unsigned long long>(releases), static_cast<unsigned long long>(released),
      static_cast<unsigned long long>(picks), static_cast<unsigned long long>(stale), failures);
  return failures == 0 ? 0 : 1;
}
