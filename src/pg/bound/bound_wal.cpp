// The custom WAL resource manager of the durable bound (durable.cpp states
// the protocol): its record, written by backends, and its redo, which runs in
// the startup process (crash recovery, standbys) and keeps the state file up
// with the records it replays.
#include "bound_wal.hpp"

#include <algorithm>

#include "../compat.hpp"
#include "durable.hpp"
#include "../node.hpp"
#include "../node_memory.hpp"
#include "../settings.hpp"
#include "marks.hpp"
#include "state_file.hpp"
#include "../time.hpp"

namespace snowflake::pg {

namespace {

// Registered on https://wiki.postgresql.org/wiki/CustomWALResourceManagers
// before a release; IDs 128-139 and 241 are taken there.
constexpr RmgrId kRmgrId = 189;
constexpr uint8 kBoundRecord = 0x10;

struct BoundRecord {
  uint64_t id_bound;
};

// Redo's write of a replayed bound. If the state file cannot be written (a
// full disk, a directory made read-only), replay waits here, retrying every
// second, rather than fail: a startup process that exits takes the server
// down, and it would fail on the same record at every start. Going past the
// record without writing it is not safe either: once the next restartpoint
// recycles its WAL, a standby restarted before promotion would start from an
// older bound. So a hot standby keeps answering queries while its replay
// waits, says so in the log, and goes on by itself once the write succeeds.
void write_replayed_bound(int64_t until, int64_t durable, XLogRecPtr at) {
  constexpr long kRetryMs = 1000;
  for (int attempt = 0;; attempt++) {
    if (write_state_file(until, durable, attempt == 0 ? WARNING : DEBUG1)) {
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
  const bound::Replay replay = bound::at_replay(
      {shared_node->written_until, shared_node->state_file_written, shared_node->written_durable},
      bound_state(), until);
  if (replay.write_state_file) {
    // Kept in the state file too, so a standby that restarts before its
    // promotion does not depend on WAL it has already recycled.
    write_replayed_bound(replay.written.until, replay.written.durable, record->ReadRecPtr);
    if (replay.remove_vouches) remove_vouches(WARNING);
    shared_node->written_until = replay.written.until;
    shared_node->written_durable = replay.written.durable;
    shared_node->state_file_written = replay.written.state_file;
  }
  // The primary knew its bound when it wrote the record, and so does this
  // server once it has it, in its state file: the marks have had their answer
  // (also when the state file was already above the record, as after a crash
  // between an operator's bound and the removal of the marks).
  if (replay.remove_marks) remove_unknown_marks(WARNING);
  set_bound_state(replay.state);
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

RmgrData resource_manager;

}  // namespace

XLogRecPtr log_bound(int64_t until) {
  BoundRecord bound_record{settings.layout.id_bound(until)};
  XLogBeginInsert();
  XLogRegisterData(reinterpret_cast<char*>(&bound_record), sizeof(bound_record));
  const XLogRecPtr lsn = XLogInsert(kRmgrId, kBoundRecord);
  XLogFlush(lsn);
  return lsn;
}

void register_wal_resource_manager() {
  resource_manager.rm_name = "snowflake";
  resource_manager.rm_redo = redo;
  resource_manager.rm_desc = describe;
  resource_manager.rm_identify = identify;
  RegisterCustomRmgr(kRmgrId, &resource_manager);
}

}  // namespace snowflake::pg
