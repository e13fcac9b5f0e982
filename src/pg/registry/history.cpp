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
// The comparisons are the round's (src/core/registry_round.hpp: the probe's
// answer and every claim's). A change is a WARNING (once per change: the
// identity seen is remembered), snowflake_registry_status's
// registry_history_changed_at (the registry's clock), the floor of every
// claim that is not a renewal, and, while a lease is held, the gap above its
// cap (lease.cpp skips it).
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

#include "../../core/registry_history.hpp"
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

const char* system_text(uint64_t system_identifier) {
  return system_identifier == 0 ? "(unknown)" : psprintf("%" PRIu64, system_identifier);
}

const char* identity_text(const registry_history::Identity& identity) {
  return psprintf("system identifier %s, timeline %lld, table OID %lld",
                  system_text(identity.system_identifier),
                  static_cast<long long>(identity.timeline),
                  static_cast<long long>(identity.table));
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

void remember_history(const registry_history::Memory& memory) {
  if (!(memory == written)) write_file(memory);
}

bool probe_history(const RegistryFacts& facts, registry_round::Answer* answer, char* error) {
  const char* const table[] = {with_table("{table}")};
  PGresult* result =
      run(with_table("SELECT $1::regclass::oid::bigint,\n"
                     "    (extract(epoch FROM now())::numeric * 1000::numeric)::bigint,\n"
                     "    (SELECT (extract(epoch FROM max(expires_at - renewed_at))::numeric\n"
                     "        * 1000::numeric)::bigint\n"
                     "      FROM {table} WHERE isfinite(expires_at) AND isfinite(renewed_at))"),
          1, table, error);
  if (result == nullptr) return false;
  answer->probed = true;
  answer->registry =
      registry_history::Identity{strtoull(facts.system_identifier, nullptr, 10), facts.timeline,
                                 strtoll(PQgetvalue(result, 0, 0), nullptr, 10)};
  answer->probe_now_ms = strtoll(PQgetvalue(result, 0, 1), nullptr, 10);
  answer->longest_lease_ms =
      PQgetisnull(result, 0, 2) ? 0 : strtoll(PQgetvalue(result, 0, 2), nullptr, 10);
  PQclear(result);
  return true;
}

void warn_history_changed(const registry_round::HistoryChange& change) {
  using registry_round::HistoryChange;
  const char* what = "";
  switch (change.what) {
    case HistoryChange::kIdentity:
      what = psprintf("it is %s, and was %s", identity_text(change.after),
                      identity_text(change.before));
      break;
    case HistoryChange::kUnreadable:
      what = psprintf("it is %s, and this node's record of it could not be read",
                      identity_text(change.after));
      break;
    case HistoryChange::kRowGone:
      what = psprintf(
          "its row of datacenter_id %d, worker_id %d is gone, which this node saw renewed at %s",
          change.datacenter_id, change.worker_id,
          timestamp_text(timestamptz_from_unix_ms(change.seen_renewed_at_us / 1000)));
      break;
    case HistoryChange::kRowOlder:
      what = psprintf(
          "its row of datacenter_id %d, worker_id %d was last renewed at %s, and this node saw "
          "it renewed at %s",
          change.datacenter_id, change.worker_id,
          timestamp_text(timestamptz_from_unix_ms(change.previous_renewed_at_us / 1000)),
          timestamp_text(timestamptz_from_unix_ms(change.seen_renewed_at_us / 1000)));
      break;
  }
  const Layout& layout = settings.layout;
  const char* gap =
      change.gap_until <= 0
          ? ""
          : psprintf(
                "; under the lease it holds on datacenter_id %d, worker_id %d, it issues no "
                "ID from %s (its limit when it saw the change) to then",
                change.held_datacenter_id, change.held_worker_id,
                timestamp_text(timestamptz_from_unix_ms(layout.unix_ms(change.gap_from))));
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
                   timestamp_text(timestamptz_from_unix_ms(change.floor_ms)), gap)));
}

void log_claim_above_floor(const registry_round::Round& round, int64_t floor_ms) {
  ereport(LOG, (errmsg("snowflake registry: claiming datacenter_id %d, worker_id %d above %s, as "
                       "the registry's history changed at %s",
                       round.datacenter_id, round.worker_id,
                       timestamp_text(timestamptz_from_unix_ms(floor_ms)),
                       timestamp_text(timestamptz_from_unix_ms(round.history.changed_at_ms)))));
}

}  // namespace snowflake::pg::registry
