// The durable bound, which keeps the node's IDs unique across restarts,
// crashes and failover: the state file pg_snowflake/state, the custom WAL
// resource manager that carries the bound to standbys and through crash
// recovery (its redo runs in the startup process), and make_durable(), which
// backends call to raise it.
//
// Durability protocol. The generator never issues an ID of a unit of time at or
// after its durable bound. To go past it, a backend takes durable_lock, writes
// a later bound (the candidate's unit plus the generator's durable interval:
// kDurableIntervalMs, at least four units) as a WAL
// record of our custom resource manager, flushes it, writes it to the state
// file pg_snowflake/state (fsync, durable rename) and releases the lock. When
// synchronous_standby_names is set, it then waits until the synchronous
// standbys have flushed the record, whatever the session's synchronous_commit
// (a session may lower that for its own commits, but a bound serves every
// backend); a wait that is cancelled ends the call with an error. Only then is
// the bound published to the generator. So:
// - after a crash, the state file (read at start) and the WAL records replayed
//   since the last checkpoint give a bound above every ID issued before;
// - a streaming standby replays the records, so on promotion it starts above
//   every ID whose bound reached it (with synchronous replication: every ID,
//   since no ID is issued under a bound the synchronous standbys lack);
// - the cost is one WAL flush and one file fsync per interval, not per ID; a
//   backend raises the bound early (half an interval before it is reached, if
//   the lock is free) so the others rarely wait for it.
// A clean shutdown writes the exact bound (the unit after the last ID)
// instead, so a quick restart does not start ahead of the clock. WAL and the
// file hold the bound as an ID (Layout::id_bound), which stays true if the
// layout or the epoch changes.
//
// Where the bound comes from (BoundState). The postmaster reads the state file
// at start. A data directory that has issued IDs, or in which CREATE
// EXTENSION snowflake ran under the preload, has one (note_extension_created
// writes an empty bound); so a missing file means a new data directory, or
// one filled from another without pg_snowflake/: by pg_upgrade (which copies
// only relations and catalogs), or a copy or restore that skipped it. Which
// one only the databases can tell, so the node starts "checking": the
// registry worker looks for the extension in every database
// (bound_check.cpp). Found nowhere, the bound is known (nothing was issued);
// found, it is unknown, and make_durable refuses every ID until an operator
// gives the bound (adopt_bound: the old data directory's state file, or a
// time). A replayed bound record makes it known too: it is above every ID the
// primary issued before it. No ID is ever issued under an unknown bound, and
// the hot path pays nothing for this: a node without a bound reaches
// make_durable on its first ID. A dump restored into a new cluster cannot be
// told from a new node's data (README, "Upgrading PostgreSQL": a new identity,
// or the old bound); Debian's pg_upgradecluster gets the old bound from the
// package's hook (debian/pg_upgradecluster-hook) before any data arrives.
#include "durable.hpp"

#include <algorithm>
#include <cerrno>

#include "compat.hpp"
#include "node.hpp"
#include "node_memory.hpp"
#include "postgres.hpp"
#include "settings.hpp"
#include "time.hpp"

namespace snowflake::pg {

namespace {

// Registered on https://wiki.postgresql.org/wiki/CustomWALResourceManagers
// before a release; IDs 128-139 and 241 are taken there.
constexpr RmgrId kRmgrId = 189;
constexpr uint8 kBoundRecord = 0x10;

constexpr char kStateDirectory[] = "pg_snowflake";
constexpr char kStatePath[] = "pg_snowflake/state";
constexpr char kStateTempPath[] = "pg_snowflake/state.tmp";
constexpr uint32 kStateMagic = 0x534e4f57;  // "SNOW"
constexpr uint32 kStateVersion = 1;

struct BoundRecord {
  uint64_t id_bound;
};

struct StateFile {
  uint32 magic;
  uint32 version;
  uint64_t id_bound;
  int64_t epoch_ms;
  int32 bits[4];  // timestamp, datacenter, worker, sequence
  pg_crc32c crc;  // of everything above
};

pg_crc32c state_crc(const StateFile& file) {
  pg_crc32c crc;
  INIT_CRC32C(crc);
  COMP_CRC32C(crc, &file, offsetof(StateFile, crc));
  FIN_CRC32C(crc);
  return crc;
}

// Writes the bound `until` to the state file durably: a complete new file,
// fsynced, then renamed over the old one. Raises `elevel` on failure, and
// returns whether it succeeded.
bool write_state_file(int64_t until, int elevel) {
  const Layout& layout = settings.layout;
  StateFile file;
  memset(&file, 0, sizeof(file));
  file.magic = kStateMagic;
  file.version = kStateVersion;
  file.id_bound = layout.id_bound(until);
  file.epoch_ms = layout.epoch_ms();
  file.bits[0] = layout.timestamp_bits();
  file.bits[1] = layout.datacenter_bits();
  file.bits[2] = layout.worker_bits();
  file.bits[3] = layout.sequence_bits();
  file.crc = state_crc(file);

  if (MakePGDirectory(kStateDirectory) == 0) {
    // A new directory's entry is durable only once its parent is fsynced
    // (durable_rename below fsyncs the directory itself, not its parent).
    if (fsync_fname_ext(".", true, false, elevel) != 0) return false;
  } else if (errno != EEXIST) {
    ereport(elevel, (errcode_for_file_access(),
                     errmsg("could not create directory \"%s\": %m", kStateDirectory)));
    return false;
  }
  const int fd = OpenTransientFile(kStateTempPath, O_CREAT | O_WRONLY | O_TRUNC | PG_BINARY);
  if (fd < 0) {
    ereport(elevel, (errcode_for_file_access(),
                     errmsg("could not create file \"%s\": %m", kStateTempPath)));
    return false;
  }
  errno = 0;
  const bool written = write(fd, &file, sizeof(file)) == static_cast<ssize_t>(sizeof(file));
  if (!written && errno == 0) errno = ENOSPC;
  const bool synced = written && pg_fsync(fd) == 0;
  const int saved_errno = errno;
  CloseTransientFile(fd);
  if (!synced) {
    errno = saved_errno;
    ereport(elevel,
            (errcode_for_file_access(),
             errmsg("could not %s file \"%s\": %m", written ? "fsync" : "write", kStateTempPath)));
    return false;
  }
  return durable_rename(kStateTempPath, kStatePath, elevel) == 0;
}

// Reads the state file at `path` into `file`; false if there is none. A file
// that is not one (short, another magic or version, a wrong checksum) is an
// error.
bool read_state(const char* path, StateFile* file) {
  const int fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    ereport(ERROR, (errcode_for_file_access(), errmsg("could not open file \"%s\": %m", path)));
  }
  const ssize_t got = read(fd, file, sizeof(*file));
  CloseTransientFile(fd);
  if (got != static_cast<ssize_t>(sizeof(*file)) || file->magic != kStateMagic ||
      file->version != kStateVersion || file->crc != state_crc(*file)) {
    ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                    errmsg("snowflake state file \"%s\" is corrupt", path),
                    errdetail("It holds the bound above every ID its node has issued; without it a "
                              "clock set back could make the node issue an ID again."),
                    errhint("Restore the file from a backup of its node, or give the bound with "
                            "snowflake_set_bound() (README, \"Upgrading PostgreSQL\").")));
  }
  return true;
}

// The bound in this data directory's state file; false if there is none.
bool read_state_file(int64_t* until) {
  StateFile file;
  if (!read_state(kStatePath, &file)) return false;
  const Layout& layout = settings.layout;
  if (file.epoch_ms != layout.epoch_ms() || file.bits[0] != layout.timestamp_bits() ||
      file.bits[1] != layout.datacenter_bits() || file.bits[2] != layout.worker_bits() ||
      file.bits[3] != layout.sequence_bits()) {
    ereport(
        WARNING,
        (errmsg("snowflake layout or epoch changed since this node last issued IDs"),
         errdetail("The IDs were issued with snowflake.epoch = %lld and widths %d/%d/%d/%d; "
                   "the server now has snowflake.epoch = %lld and widths %d/%d/%d/%d.",
                   static_cast<long long>(file.epoch_ms), file.bits[0], file.bits[1], file.bits[2],
                   file.bits[3], static_cast<long long>(layout.epoch_ms()), layout.timestamp_bits(),
                   layout.datacenter_bits(), layout.worker_bits(), layout.sequence_bits()),
         errhint("New IDs still stay above every ID issued before, so a change that makes "
                 "them smaller leaves the node unable to issue IDs until its clock catches "
                 "up.")));
  }
  *until = layout.timestamp_bound(file.id_bound);
  return true;
}

void set_bound_state(BoundState state) {
  pg_atomic_write_u32(&shared_node->bound_state, static_cast<uint32>(state));
}

// Waits while the databases are checked (at most kCheckWaitMs, interruptibly);
// an error if the bound is, or stays, unknown.
constexpr int64_t kCheckWaitMs = 10000;
constexpr long kCheckPollMs = 50;

// Whether this database has snowflake_set_bound() (and so
// snowflake_restore_bound(): extension version 1.4 and later), in any schema.
bool has_bound_functions() {
  CatCList* functions =
      SearchSysCacheList1(PROCNAMEARGSNSP, CStringGetDatum("snowflake_set_bound"));
  const bool found = functions->n_members > 0;
  ReleaseSysCacheList(functions);
  return found;
}

void require_known_bound() {
  const TimestampTz give_up = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), kCheckWaitMs);
  while (bound_state() == BoundState::kChecking && GetCurrentTimestamp() < give_up) {
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, kCheckPollMs,
                    PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
  }
  switch (bound_state()) {
    case BoundState::kKnown:
      return;
    case BoundState::kChecking:
      ereport(ERROR,
              (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
               errmsg("snowflake is still checking whether this data directory has issued IDs"),
               errdetail("pg_snowflake/state was missing when the server started, so the "
                         "snowflake registry worker looks for the extension in every database "
                         "before the first ID; it has not finished within %lld ms.",
                         static_cast<long long>(kCheckWaitMs)),
               errhint("Try again in a moment; the server log says when the check ends.")));
      break;
    case BoundState::kUnknown: {
      LWLockAcquire(shared_node->durable_lock, LW_SHARED);
      const char* found = pstrdup(shared_node->bound_found_in);
      LWLockRelease(shared_node->durable_lock);
      // After pg_upgrade an extension keeps its version until ALTER EXTENSION
      // UPDATE, and versions before 1.4 lack the two functions.
      const char* first = has_bound_functions() ? "" : "ALTER EXTENSION snowflake UPDATE, then ";
      ereport(ERROR,
              (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
               errmsg("the bound above this node's earlier snowflake IDs is unknown"),
               errdetail("pg_snowflake/state was missing when the server started, yet the "
                         "snowflake extension is in database %s: this data directory was made "
                         "by pg_upgrade, or restored or copied without pg_snowflake/, and IDs "
                         "issued before could be issued again.",
                         found),
               errhint("As a superuser, run %sSELECT snowflake_restore_bound('/path/to/old/data') "
                       "with the data directory this one came from, or, if it never issued "
                       "IDs, SELECT snowflake_set_bound(now()).",
                       first)));
      break;
    }
  }
}

// At a clean shutdown every backend is gone, so the exact bound is known.
void save_exact_bound(int code, Datum) {
  if (code != 0 || shared_node == nullptr) return;
  const int64_t exact = settings.layout.timestamp_of(shared_node->generator.last_id.load()) + 1;
  if (exact < shared_node->generator.durable_until.load()) write_state_file(exact, LOG);
}

// Redo's write of a replayed bound. If the state file cannot be written (a
// full disk, a directory made read-only), replay waits here, retrying every
// second, rather than fail: a startup process that exits takes the server
// down, and it would fail on the same record at every start. Going past the
// record without writing it is not safe either: once the next restartpoint
// recycles its WAL, a standby restarted before promotion would start from an
// older bound. So a hot standby keeps answering queries while its replay
// waits, says so in the log, and goes on by itself once the write succeeds.
void write_replayed_bound(int64_t until, XLogRecPtr at) {
  constexpr long kRetryMs = 1000;
  for (int attempt = 0;; attempt++) {
    if (write_state_file(until, attempt == 0 ? WARNING : DEBUG1)) {
      if (attempt > 0)
        ereport(LOG, (errmsg("snowflake: wrote pg_snowflake/state; WAL replay goes on")));
      return;
    }
    if (attempt == 0) {
      ereport(
          WARNING,
          (errmsg("snowflake: WAL replay waits at %X/%X until pg_snowflake/state can be written",
                  static_cast<uint32>(at >> 32), static_cast<uint32>(at)),
           errdetail("The record raises the bound above the primary's IDs to %s; a server "
                     "that went past it without writing it could issue some of them again "
                     "after a restart and a promotion.",
                     timestamp_text(timestamptz_from_unix_ms(settings.layout.unix_ms(until)))),
           errhint("Free space on the data directory's file system, or make pg_snowflake/ "
                   "writable by the server's user; replay then goes on by itself.")));
    }
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, kRetryMs,
                    PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
    if (AmStartupProcess())
      compat::process_startup_interrupts();
    else
      CHECK_FOR_INTERRUPTS();
    if (attempt > 0 && attempt % 60 == 0)
      ereport(LOG, (errmsg("snowflake: WAL replay still waits to write pg_snowflake/state")));
  }
}

// The record's bound; false if the record is not one this library wrote.
bool read_bound_record(XLogReaderState* record, BoundRecord* bound_record) {
  if ((XLogRecGetInfo(record) & XLR_RMGR_INFO_MASK) != kBoundRecord ||
      XLogRecGetDataLen(record) != sizeof(BoundRecord))
    return false;
  memcpy(bound_record, XLogRecGetData(record), sizeof(BoundRecord));
  return true;
}

void redo(XLogReaderState* record) {
  BoundRecord bound_record;
  if (!read_bound_record(record, &bound_record))
    elog(PANIC, "snowflake redo: unknown record (op code %u, %u bytes)",
         XLogRecGetInfo(record) & XLR_RMGR_INFO_MASK, XLogRecGetDataLen(record));
  const int64_t until = settings.layout.timestamp_bound(bound_record.id_bound);
  node_generator()->restore(until);
  if (until > shared_node->written_until || !shared_node->state_file_written) {
    // Kept in the state file too, so a standby that restarts before its
    // promotion does not depend on WAL it has already recycled (and, for the
    // empty bound CREATE EXTENSION writes, vouches as its primary does).
    write_replayed_bound(until, record->ReadRecPtr);
    shared_node->written_until = std::max(until, shared_node->written_until);
    shared_node->state_file_written = true;
  }
  set_bound_state(BoundState::kKnown);
}

void describe(StringInfo buffer, XLogReaderState* record) {
  BoundRecord bound_record;
  if (!read_bound_record(record, &bound_record)) {
    appendStringInfo(buffer, "unknown record of %u bytes", XLogRecGetDataLen(record));
    return;
  }
  appendStringInfo(buffer, "IDs below %llu",
                   static_cast<unsigned long long>(bound_record.id_bound));
}

const char* identify(uint8 info) {
  return (info & XLR_RMGR_INFO_MASK) == kBoundRecord ? "BOUND" : nullptr;
}

// Whether WAL up to `lsn` is flushed on the synchronous standbys, or none
// are required: synchronous_standby_names is empty, or the checkpointer has
// not taken it up yet (commits do not wait then either).
bool synchronous_standbys_have(XLogRecPtr lsn) {
  if (max_wal_senders == 0 || SyncRepStandbyNames == nullptr || SyncRepStandbyNames[0] == '\0')
    return true;
  LWLockAcquire(SyncRepLock, LW_SHARED);
  const bool have =
      !compat::sync_standbys_defined(WalSndCtl) || WalSndCtl->lsn[SYNC_REP_WAIT_FLUSH] >= lsn;
  LWLockRelease(SyncRepLock);
  return have;
}

// Waits, as a commit at synchronous_commit = on would, until the synchronous
// standbys have flushed the bound record at `lsn`. SyncRepWaitForLSN waits
// only as far as the session's synchronous_commit asks, so the setting is
// raised for the wait in a GUC nest level of its own (as a function's SET
// clause does; allowed in parallel workers too), with interrupts held, as its
// contract asks. A cancel or statement_timeout ends its wait with a WARNING
// and returns; then the bound is not confirmed, and this call fails.
void wait_for_synchronous_standbys(XLogRecPtr lsn, int64_t until) {
  if (synchronous_standbys_have(lsn)) return;
  const int nest_level = NewGUCNestLevel();
  (void)set_config_option("synchronous_commit", "on", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                          true, 0, false);
  HOLD_INTERRUPTS();
  SyncRepWaitForLSN(lsn, false);
  RESUME_INTERRUPTS();
  AtEOXact_GUC(true, nest_level);
  CHECK_FOR_INTERRUPTS();  // a terminated backend exits here
  if (synchronous_standbys_have(lsn)) return;
  ereport(ERROR,
          (errcode(ERRCODE_QUERY_CANCELED),
           errmsg("canceled the wait for synchronous standbys to confirm a new snowflake ID bound"),
           errdetail("IDs up to %s need a durable bound that this server has written to WAL at "
                     "%X/%X but the standbys in synchronous_standby_names = '%s' have not "
                     "confirmed; no ID under it was issued.",
                     timestamp_text(timestamptz_from_unix_ms(settings.layout.unix_ms(until))),
                     static_cast<uint32>(lsn >> 32), static_cast<uint32>(lsn), SyncRepStandbyNames),
           errhint("Bring a synchronous standby back, or remove it from "
                   "synchronous_standby_names and reload.")));
}

// Makes `until` the durable bound: its WAL record, flushed, then the state
// file. The caller holds durable_lock exclusively; an error leaves the old
// bound in force. Returns the record's position, for the standbys' wait.
XLogRecPtr write_bound(int64_t until) {
  BoundRecord bound_record{settings.layout.id_bound(until)};
  XLogBeginInsert();
  XLogRegisterData(reinterpret_cast<char*>(&bound_record), sizeof(bound_record));
  const XLogRecPtr lsn = XLogInsert(kRmgrId, kBoundRecord);
  XLogFlush(lsn);
  write_state_file(until, ERROR);
  shared_node->written_until = until;
  shared_node->written_lsn = lsn;
  shared_node->state_file_written = true;
  return lsn;
}

RmgrData resource_manager;

}  // namespace

void restore_durable_bound() {
  int64_t until = 0;
  const bool found = read_state_file(&until);
  shared_node->written_until = until;
  shared_node->state_file_written = found;
  node_generator()->restore(until);
  set_bound_state(found ? BoundState::kKnown : BoundState::kChecking);
  on_shmem_exit(save_exact_bound, 0);
}

BoundState bound_state() {
  return static_cast<BoundState>(pg_atomic_read_u32(&shared_node->bound_state));
}

void conclude_bound_check(const char* found) {
  LWLockAcquire(shared_node->durable_lock, LW_EXCLUSIVE);
  if (bound_state() == BoundState::kChecking) {
    strlcpy(shared_node->bound_found_in, found != nullptr ? found : "",
            sizeof(shared_node->bound_found_in));
    set_bound_state(found != nullptr ? BoundState::kUnknown : BoundState::kKnown);
  }
  LWLockRelease(shared_node->durable_lock);
}

void note_extension_created() {
  if (shared_node == nullptr) return;
  // The check cannot see this transaction's extension, so its verdict is
  // about the others.
  if (bound_state() == BoundState::kChecking) require_known_bound();
  if (bound_state() == BoundState::kUnknown) {
    ereport(WARNING,
            (errmsg("snowflake cannot issue IDs on this server until the bound above its "
                    "earlier IDs is given"),
             errdetail("pg_snowflake/state was missing when the server started, and other "
                       "databases have the extension."),
             errhint("As a superuser, SELECT snowflake_restore_bound('/path/to/old/data') or "
                     "SELECT snowflake_set_bound(now()); README, \"Upgrading PostgreSQL\".")));
    return;
  }
  LWLockAcquire(shared_node->durable_lock, LW_SHARED);
  const bool written = shared_node->state_file_written;
  LWLockRelease(shared_node->durable_lock);
  // In WAL too, so that a standby cloned before now vouches as well.
  if (!written) (void)adopt_bound(shared_node->written_until);
}

int64_t adopt_bound(int64_t until) {
  LWLockAcquire(shared_node->durable_lock, LW_EXCLUSIVE);
  until = std::max(until, shared_node->written_until);
  const XLogRecPtr lsn = write_bound(until);
  LWLockRelease(shared_node->durable_lock);
  wait_for_synchronous_standbys(lsn, until);
  node_generator()->restore(until);
  LWLockAcquire(shared_node->durable_lock, LW_EXCLUSIVE);
  set_bound_state(BoundState::kKnown);
  LWLockRelease(shared_node->durable_lock);
  return until;
}

uint64_t read_other_state_file(const char* data_directory) {
  char path[MAXPGPATH];
  snprintf(path, sizeof(path), "%s/%s", data_directory, kStatePath);
  StateFile file;
  if (!read_state(path, &file)) {
    ereport(ERROR, (errcode(ERRCODE_UNDEFINED_FILE),
                    errmsg("there is no snowflake state file \"%s\"", path),
                    errdetail("A data directory has one once it has issued a snowflake ID, or once "
                              "CREATE EXTENSION snowflake ran in it with the library preloaded."),
                    errhint("Name the data directory this one was upgraded or copied from. If that "
                            "one never issued IDs either, SELECT snowflake_set_bound(now()).")));
  }
  return file.id_bound;
}

void register_wal_resource_manager() {
  resource_manager.rm_name = "snowflake";
  resource_manager.rm_redo = redo;
  resource_manager.rm_desc = describe;
  resource_manager.rm_identify = identify;
  RegisterCustomRmgr(kRmgrId, &resource_manager);
}

void make_durable(int64_t timestamp, bool wait) {
  Generator* generator = node_generator();
  if (unlikely(bound_state() != BoundState::kKnown)) {
    if (!wait) return;
    require_known_bound();
  }
  if (wait) {
    LWLockAcquire(shared_node->durable_lock, LW_EXCLUSIVE);
  } else if (!LWLockConditionalAcquire(shared_node->durable_lock, LW_EXCLUSIVE)) {
    return;
  }
  if (generator->durable_bound_near(shared_node->written_until, timestamp)) {
    (void)write_bound(generator->durable_until_after(timestamp));
  }
  const int64_t until = shared_node->written_until;
  const XLogRecPtr lsn = shared_node->written_lsn;
  LWLockRelease(shared_node->durable_lock);

  // An early raise (the caller already holds its IDs) does not wait: a later
  // call publishes the bound once the standbys have it.
  if (wait) {
    wait_for_synchronous_standbys(lsn, until);
  } else if (!synchronous_standbys_have(lsn)) {
    return;
  }
  generator->publish_durable(until);
}

}  // namespace snowflake::pg
