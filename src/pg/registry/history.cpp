// The registry's history as this node sees it. The protocol rests on the
// registry keeping every claim and renewal it acknowledged (doc/registry.md,
// "What it must keep"); a registry that fails over to an asynchronous
// standby, is restored, or whose database or table is dropped and made again
// (by hand, or by the worker, which creates a missing table) forgets leases
// whose holders still issue under them. src/core/registry_history.hpp states
// what counts as a change of its history and what the node then does; here
// is where the worker looks:
//   - at every connection and every probe after it (durability.cpp): the
//     registry's system identifier, timeline and table OID against the ones
//     this node remembers;
//   - in every claim's answer (claim.cpp): the table's OID again (a table
//     made again while the connection stays open), and the row before the
//     statement against what this worker last saw of it (gone, or renewed
//     earlier than it saw).
// A change is a WARNING (once per change: the identity seen is remembered),
// snowflake_registry_status's registry_history_changed_at (the registry's
// clock), the floor of every claim that is not a renewal (worker.cpp,
// record_claim), and, while a lease is held, the gap above its cap
// (lease.cpp skips it).
//
// What it remembers. pg_snowflake/registry holds the identity last seen, the
// longest lease of the registry's rows, and the last change with its floor,
// written (a complete file, fsynced, renamed) whenever one of them changes,
// before the claim that depends on it is recorded. So a node restarted, a
// restored backup or a copy of a node (which carry the file) compares at its
// first probe, and a node restarted after it saw a change keeps its floor.
// Another registry (snowflake.registry changed) is compared too: the leases
// of the old one are not in it. A file that cannot be read counts as a
// change at the first probe. A node that never reached the registry
// remembers nothing to compare (doc/registry.md says what that leaves).
#include "history.hpp"

#include <cerrno>
#include <cinttypes>

#include "../../core/lease.hpp"
#include "../../core/registry_history.hpp"
#include "../node.hpp"
#include "../settings.hpp"
#include "../time.hpp"
#include "client.hpp"

namespace snowflake::pg::registry {

namespace {

constexpr char kDirectory[] = "pg_snowflake";
constexpr char kPath[] = "pg_snowflake/registry";
constexpr char kTempPath[] = "pg_snowflake/registry.tmp";
constexpr uint32 kMagic = 0x52464e53;  // "SNFR"
constexpr uint32 kVersion = 1;

struct HistoryFile {
  uint32 magic;
  uint32 version;
  uint64 system_identifier;
  int64 timeline;
  int64 table;
  int64 longest_lease_ms;
  int64 changed_at_ms;
  int64 floor_ms;
  pg_crc32c crc;  // of everything above
};

pg_crc32c file_crc(const HistoryFile& file) {
  pg_crc32c crc;
  INIT_CRC32C(crc);
  COMP_CRC32C(crc, &file, offsetof(HistoryFile, crc));
  FIN_CRC32C(crc);
  return crc;
}

// What this worker last saw of the row it claims, and in which table.
struct RowSeen {
  int datacenter_id = -1;
  int worker_id = -1;
  int64_t renewed_at_us = 0;  // 0: nothing (or an infinite renewed_at)
  int64_t table = 0;
};
RowSeen row_seen;

// What the file holds (so it is written only when that changes).
registry_history::Memory written;

// Writes the memory durably; a failure is a WARNING (the memory in shared
// memory still applies until the server restarts).
void write_file(const registry_history::Memory& memory) {
  HistoryFile file;
  memset(&file, 0, sizeof(file));
  file.magic = kMagic;
  file.version = kVersion;
  file.system_identifier = memory.identity.system_identifier;
  file.timeline = memory.identity.timeline;
  file.table = memory.identity.table;
  file.longest_lease_ms = memory.longest_lease_ms;
  file.changed_at_ms = memory.changed_at_ms;
  file.floor_ms = memory.floor_ms;
  file.crc = file_crc(file);
  if (MakePGDirectory(kDirectory) == 0) {
    (void)fsync_fname_ext(".", true, false, WARNING);
  } else if (errno != EEXIST) {
    ereport(WARNING, (errcode_for_file_access(),
                      errmsg("could not create directory \"%s\": %m", kDirectory)));
    return;
  }
  const int fd = OpenTransientFile(kTempPath, O_CREAT | O_WRONLY | O_TRUNC | PG_BINARY);
  if (fd < 0) {
    ereport(WARNING,
            (errcode_for_file_access(), errmsg("could not create file \"%s\": %m", kTempPath)));
    return;
  }
  errno = 0;
  const bool done = write(fd, &file, sizeof(file)) == static_cast<ssize_t>(sizeof(file));
  if (!done && errno == 0) errno = ENOSPC;
  const bool synced = done && pg_fsync(fd) == 0;
  const int saved_errno = errno;
  CloseTransientFile(fd);
  if (!synced) {
    errno = saved_errno;
    ereport(WARNING, (errcode_for_file_access(),
                      errmsg("could not %s file \"%s\": %m", done ? "fsync" : "write", kTempPath)));
    return;
  }
  if (durable_rename(kTempPath, kPath, WARNING) == 0) written = memory;
}

void remember(const View& view) {
  if (!(view.registry.history == written)) write_file(view.registry.history);
}

const char* system_text(uint64_t system_identifier) {
  return system_identifier == 0 ? "(unknown)" : psprintf("%" PRIu64, system_identifier);
}

const char* identity_text(const registry_history::Identity& identity) {
  return psprintf("system identifier %s, timeline %lld, table OID %lld",
                  system_text(identity.system_identifier),
                  static_cast<long long>(identity.timeline),
                  static_cast<long long>(identity.table));
}

// A change seen at the registry's `now_ms`: the floor (core), the gap of a
// lease held, the time for the status, the WARNING saying `what` changed.
void saw_change(View* view, int64_t now_ms, const char* what) {
  registry_history::Memory& memory = view->registry.history;
  registry_history::seen_change(&memory, now_ms, settings.registry_lease_ms, settings.max_lead_ms);
  view->registry.history_changed_at = timestamptz_from_unix_ms(now_ms);
  const Layout& layout = settings.layout;
  const char* gap = "";
  if (view->state == State::kHeld) {
    lease::Grant grant = grant_of(*view, true);
    Generator* generator = node_generator();
    const int64_t last =
        generator != nullptr ? layout.timestamp_of(generator->state().last_id.load()) : 0;
    lease::gap_after_change(&grant, layout.timestamp_from_unix_ms(memory.floor_ms), last);
    view->gap_from = grant.gap_from;
    view->gap_until = grant.gap_until;
    if (grant.gap_until > 0)
      gap = psprintf(
          "; under the lease it holds on datacenter_id %d, worker_id %d, it issues no ID from %s "
          "(its limit when it saw the change) to then",
          view->datacenter_id, view->worker_id,
          timestamp_text(timestamptz_from_unix_ms(layout.unix_ms(grant.gap_from))));
  }
  char server[kHostSize];
  describe_server(server, sizeof(server));
  ereport(WARNING,
          (errmsg("the snowflake registry's history changed: %s", what),
           errdetail("The registry (%s) failed over, was restored, or its table was dropped and "
                     "made again since this node last saw it. Its leases and the floors read "
                     "from it (ids_before) are trusted only as far as it kept the commits it "
                     "acknowledged before.",
                     server),
           errhint("If it lost commits (a failover to an asynchronous standby, a restore to an "
                   "earlier point, its database or table made again), a node that takes an "
                   "identity over may start below IDs already issued; see \"What it must keep\" "
                   "in doc/registry.md. This node starts every identity it claims from now on at "
                   "%s or later%s.",
                   timestamp_text(timestamptz_from_unix_ms(memory.floor_ms)), gap)));
  remember(*view);
}

}  // namespace

void load_history(View* view) {
  RegistryFacts& facts = view->registry;
  if (facts.history_loaded) return;
  facts.history_loaded = true;
  facts.history = registry_history::Memory{};
  written = registry_history::Memory{};
  const int fd = OpenTransientFile(kPath, O_RDONLY | PG_BINARY);
  if (fd < 0 && errno == ENOENT) return;
  HistoryFile file;
  ssize_t got = -1;
  int saved_errno = errno;
  if (fd >= 0) {
    got = read(fd, &file, sizeof(file));
    saved_errno = errno;
    CloseTransientFile(fd);
  }
  if (got != static_cast<ssize_t>(sizeof(file)) || file.magic != kMagic ||
      file.version != kVersion || file.crc != file_crc(file)) {
    errno = saved_errno;
    ereport(WARNING,
            (errmsg("snowflake registry: the file \"%s\" cannot be read", kPath),
             errdetail(got < 0 ? "It holds what this node remembers of the registry (its "
                                 "identity, the last change of its history): %m."
                               : "It holds what this node remembers of the registry (its "
                                 "identity, the last change of its history), and is damaged."),
             errhint("Nothing to do: this node takes the registry's history as changed at its "
                     "first answer (its claims then start a lease later) and writes the file "
                     "again.")));
    facts.history_unreadable = true;
    return;
  }
  registry_history::Memory& memory = facts.history;
  memory.identity = {file.system_identifier, file.timeline, file.table};
  memory.longest_lease_ms = file.longest_lease_ms;
  memory.changed_at_ms = file.changed_at_ms;
  memory.floor_ms = file.floor_ms;
  written = memory;
  if (memory.changed_at_ms != 0)
    facts.history_changed_at = timestamptz_from_unix_ms(memory.changed_at_ms);
}

bool probe_history(View* view, char* error) {
  const char* const table[] = {with_table("{table}")};
  PGresult* result =
      run(with_table("SELECT $1::regclass::oid::bigint,\n"
                     "    (extract(epoch FROM now())::numeric * 1000::numeric)::bigint,\n"
                     "    (SELECT (extract(epoch FROM max(expires_at - renewed_at))::numeric\n"
                     "        * 1000::numeric)::bigint\n"
                     "      FROM {table} WHERE isfinite(expires_at) AND isfinite(renewed_at))"),
          1, table, error);
  if (result == nullptr) return false;
  RegistryFacts& facts = view->registry;
  registry_history::Memory& memory = facts.history;
  const registry_history::Identity seen{strtoull(facts.system_identifier, nullptr, 10),
                                        facts.timeline,
                                        strtoll(PQgetvalue(result, 0, 0), nullptr, 10)};
  const int64_t now_ms = strtoll(PQgetvalue(result, 0, 1), nullptr, 10);
  const int64_t longest_lease_ms =
      PQgetisnull(result, 0, 2) ? 0 : strtoll(PQgetvalue(result, 0, 2), nullptr, 10);
  PQclear(result);
  const registry_history::Identity before = memory.identity;
  const unsigned change = registry_history::compare(before, seen);
  memory.identity = registry_history::merge(before, seen);
  if (change != 0) {
    saw_change(
        view, now_ms,
        psprintf("it is %s, and was %s", identity_text(memory.identity), identity_text(before)));
  } else if (facts.history_unreadable) {
    saw_change(view, now_ms,
               psprintf("it is %s, and this node's record of it could not be read",
                        identity_text(memory.identity)));
  }
  facts.history_unreadable = false;
  registry_history::seen_lease(&memory, longest_lease_ms);
  remember(*view);
  return true;
}

void check_claim(View* view, int datacenter_id, int worker_id, const ClaimResult& result) {
  registry_history::Memory& memory = view->registry.history;
  const registry_history::Identity seen{0, 0, result.table};
  const registry_history::Identity before = memory.identity;
  const unsigned identity_change = registry_history::compare(before, seen);
  memory.identity = registry_history::merge(before, seen);
  // The row, compared only with what was seen of it in the same table.
  const bool same_row = row_seen.datacenter_id == datacenter_id &&
                        row_seen.worker_id == worker_id && row_seen.table == result.table;
  const unsigned row_change = registry_history::row_change(
      same_row ? row_seen.renewed_at_us : 0,
      registry_history::RowBefore{result.existed, result.previous_renewed_at_us});
  const int64_t now_ms = result.now_us / 1000;
  if (identity_change != 0) {
    saw_change(
        view, now_ms,
        psprintf("it is %s, and was %s", identity_text(memory.identity), identity_text(before)));
  } else if (row_change & registry_history::kRowGone) {
    saw_change(view, now_ms,
               psprintf("its row of datacenter_id %d, worker_id %d is gone, which this node saw "
                        "renewed at %s",
                        datacenter_id, worker_id,
                        timestamp_text(timestamptz_from_unix_ms(row_seen.renewed_at_us / 1000))));
  } else if (row_change & registry_history::kRowOlder) {
    saw_change(
        view, now_ms,
        psprintf("its row of datacenter_id %d, worker_id %d was last renewed at %s, and this node "
                 "saw it renewed at %s",
                 datacenter_id, worker_id,
                 timestamp_text(timestamptz_from_unix_ms(result.previous_renewed_at_us / 1000)),
                 timestamp_text(timestamptz_from_unix_ms(row_seen.renewed_at_us / 1000))));
  }
  remember(*view);
  const TimestampTz renewed_at = result.row.renewed_at;
  row_seen.datacenter_id = datacenter_id;
  row_seen.worker_id = worker_id;
  row_seen.table = result.table;
  row_seen.renewed_at_us =
      TIMESTAMP_NOT_FINITE(renewed_at) ? 0 : renewed_at + kPostgresEpochUnixMs * 1000;
}

void forget_rows_seen() {
  row_seen = RowSeen{};
}

}  // namespace snowflake::pg::registry
