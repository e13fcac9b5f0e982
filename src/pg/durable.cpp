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
#include "durable.hpp"

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
// fsynced, then renamed over the old one. Raises `elevel` on failure.
void write_state_file(int64_t until, int elevel) {
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
    if (fsync_fname_ext(".", true, false, elevel) != 0) return;
  } else if (errno != EEXIST) {
    ereport(elevel, (errcode_for_file_access(),
                     errmsg("could not create directory \"%s\": %m", kStateDirectory)));
    return;
  }
  const int fd = OpenTransientFile(kStateTempPath, O_CREAT | O_WRONLY | O_TRUNC | PG_BINARY);
  if (fd < 0) {
    ereport(elevel, (errcode_for_file_access(),
                     errmsg("could not create file \"%s\": %m", kStateTempPath)));
    return;
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
    return;
  }
  (void)durable_rename(kStateTempPath, kStatePath, elevel);
}

// The bound in the state file, 0 if there is none yet.
int64_t read_state_file() {
  const int fd = BasicOpenFile(kStatePath, O_RDONLY | PG_BINARY);
  if (fd < 0) {
    if (errno == ENOENT) return 0;
    ereport(ERROR,
            (errcode_for_file_access(), errmsg("could not open file \"%s\": %m", kStatePath)));
  }
  StateFile file;
  const ssize_t got = read(fd, &file, sizeof(file));
  close(fd);
  if (got != static_cast<ssize_t>(sizeof(file)) || file.magic != kStateMagic ||
      file.version != kStateVersion || file.crc != state_crc(file)) {
    ereport(ERROR,
            (errcode(ERRCODE_DATA_CORRUPTED),
             errmsg("snowflake state file \"%s\" is corrupt", kStatePath),
             errdetail("It holds the bound above every ID this node has issued; without it a "
                       "clock set back could make the node issue an ID again."),
             errhint("Restore the file from a backup of this node. Removing it lets the server "
                     "start, trusting the clock alone for IDs issued before.")));
  }
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
  return layout.timestamp_bound(file.id_bound);
}

// At a clean shutdown every backend is gone, so the exact bound is known.
void save_exact_bound(int code, Datum) {
  if (code != 0 || shared_node == nullptr) return;
  const int64_t exact = settings.layout.timestamp_of(shared_node->generator.last_id.load()) + 1;
  if (exact < shared_node->generator.durable_until.load()) write_state_file(exact, LOG);
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
  if (until > shared_node->written_until) {
    // Kept in the state file too, so a standby that restarts before its
    // promotion does not depend on WAL it has already recycled.
    write_state_file(until, ERROR);
    shared_node->written_until = until;
  }
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

RmgrData resource_manager;

}  // namespace

void restore_durable_bound() {
  shared_node->written_until = read_state_file();
  node_generator()->restore(shared_node->written_until);
  on_shmem_exit(save_exact_bound, 0);
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
  if (wait) {
    LWLockAcquire(shared_node->durable_lock, LW_EXCLUSIVE);
  } else if (!LWLockConditionalAcquire(shared_node->durable_lock, LW_EXCLUSIVE)) {
    return;
  }
  if (generator->durable_bound_near(shared_node->written_until, timestamp)) {
    const int64_t until = generator->durable_until_after(timestamp);
    BoundRecord bound_record{settings.layout.id_bound(until)};
    XLogBeginInsert();
    XLogRegisterData(reinterpret_cast<char*>(&bound_record), sizeof(bound_record));
    const XLogRecPtr lsn = XLogInsert(kRmgrId, kBoundRecord);
    XLogFlush(lsn);
    write_state_file(until, ERROR);
    shared_node->written_until = until;
    shared_node->written_lsn = lsn;
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
