// The durable bound's second copy, in the replication origin
// "snowflake_bound": what tells a state file older than its data directory
// from a current one, and gives the bound when the state file is missing,
// damaged or unreadable (durable.cpp states the durability protocol;
// src/core/bound.hpp decides).
//
// Why an origin. pg_snowflake/state is a file of our own: nothing PostgreSQL
// does to its data directory (a checkpoint, a base backup, a standby's
// replay, a restore) keeps it in step, and a copy of it from a backup or a
// standby, put back, cannot be told from the current one by anything in it
// (not even the last checkpoint in pg_control: a crash or a fast base backup
// moves that without a bound). A replication origin is the one node-wide,
// WAL-logged, checkpointed register PostgreSQL lets an extension write: its
// progress (remote_lsn, here the durable bound as an ID, Layout::id_bound) is
// WAL-logged by replorigin_advance(), written to
// pg_logical/replorigin_checkpoint at every checkpoint, read at start and
// replayed by crash recovery, standbys, base-backup restores and PITR, and
// copied with the data directory by pg_basebackup, pgBackRest, pg_rewind and
// file-system copies. pg_upgrade and pg_dump do not carry it (nor do they the
// state file: pg_upgrade's server marks the bound unknown, README).
//
// The protocol:
// - Every write of a bound by a backend or an operator (durable.cpp
//   write_bound) raises the origin to it (go_backward false) before the WAL
//   flush of its own bound record, so one flush makes both durable, then
//   writes the state file, then publishes. The state file records the
//   durable bound in force and the origin's id (version 3), and every write
//   goes above the durable bound the file before it records
//   (bound::to_write), so the origin is above the durable bound of every
//   older copy of the file, and at it for the current one.
// - Once per start (bound::at_origin): an origin above the state file's
//   durable bound means the file is older than the data directory (a
//   backup's, a standby's, an earlier copy put back): the node takes the
//   origin's bound (the generator's floor raised above it) and writes the
//   state file anew, with a WARNING. The postmaster tells it before recovery
//   from the origins' checkpoint (pg_logical/replorigin_checkpoint, read as a
//   file, for the id the state file names: the bound records WAL replays
//   after it raise the file in redo); once recovery is over the "snowflake
//   bound register" worker consults the origin itself, at once, and so do
//   make_durable before the first ID and, without a state file read
//   (missing, damaged, unreadable), the check of the databases before its
//   first database, where an origin with a state gives the bound. Marks of
//   an unknown bound win over it.
// - Only an origin that already has a replication state is advanced by
//   backends, so a backend never fails for want of a free state slot. The
//   "snowflake bound register" worker (bound_register_worker.cpp), which the
//   registry worker starts once per start on a primary while the bound is
//   known (the registry worker is connected to no database, and
//   pg_replication_origin is a catalog only a backend connected to one
//   reads), creates the origin (a catalog insert, committed first) and gives
//   it its first state, the durable bound in force (establish_register); a
//   failure (no free state: max_replication_slots, from 18
//   max_active_replication_origins, is 0 or used up) is a WARNING once and a
//   retry a minute later, never an error of snowflake_nextval().
// - pg_upgrade carries no origin; a new cluster tried out first has its own,
//   which covers none of the data pg_upgrade brings: pg_upgrade's server
//   clears it (its value 0 is no state here) where it marks the bound
//   unknown, and Debian's hook removes the new cluster's origins' checkpoint
//   with the given bound.
// - Locks. replorigin_advance() asks for RowExclusiveLock on
//   pg_replication_origin; a drop takes ExclusiveLock on it up to 15 and a
//   lock on the origin itself from 16, so a backend takes both (the first
//   before durable_lock: waits for heavyweight locks answer interrupts) and
//   looks the origin up by name under them, and never advances an origin id
//   another origin now has. The first advance takes ExclusiveLock on the
//   catalog: no backend is then between its look-up (none found) and its
//   write, which would leave the origin below the bound.
// - A standby replays the origin's advances, so it needs a free origin state
//   too: with none, PostgreSQL stops its replay (could not find free
//   replication state slot; HINT: increase max_replication_slots).
// Without an origin state (none established yet, max_replication_slots = 0,
// an operator's drop) the node does as 1.7 did: it trusts its state file, and
// a missing or unreadable one is answered by the check of the databases.
#include "bound_register.hpp"

#include <algorithm>

#include "../compat.hpp"
#include "../node.hpp"
#include "../node_memory.hpp"
#include "../settings.hpp"
#include "../text.hpp"
#include "../time.hpp"
#include "durable.hpp"
#include "marks.hpp"
#include "state_file.hpp"

extern "C" {
#include "storage/lmgr.h"
#include "utils/inval.h"
}

namespace snowflake::pg {

namespace {

constexpr LOCKMODE kOriginLock = AccessShareLock;  // a drop takes AccessExclusiveLock (16+)

bool lock_origin_object(ReplOriginId origin, bool wait) {
  LOCKTAG tag;
  SET_LOCKTAG_OBJECT(tag, InvalidOid, ReplicationOriginRelationId, origin, 0);
  if (LockAcquire(&tag, kOriginLock, false, !wait) == LOCKACQUIRE_NOT_AVAIL) return false;
  // The catalog caches up to date with a drop waited for.
  AcceptInvalidationMessages();
  return true;
}

void unlock_origin_object(ReplOriginId origin) {
  LOCKTAG tag;
  SET_LOCKTAG_OBJECT(tag, InvalidOid, ReplicationOriginRelationId, origin, 0);
  (void)LockRelease(&tag, kOriginLock, false);
}

// The origin by name, its object lock taken; InvalidReplOriginId if there is
// none (or, with `wait` false, if its lock is held: *busy).
ReplOriginId find_origin(bool wait, bool* busy) {
  const ReplOriginId origin = replorigin_by_name(kBoundOriginName, true);
  if (origin == InvalidReplOriginId) return origin;
  if (!lock_origin_object(origin, wait)) {
    *busy = true;
    return InvalidReplOriginId;
  }
  // Dropped (and its id perhaps reused) while this waited: not ours.
  if (replorigin_by_name(kBoundOriginName, true) == origin) {
    // For the registry worker's look, and the state file's record (none in a
    // server without the preload: pg_upgrade's, clear_register).
    if (shared_node != nullptr) shared_node->register_origin = origin;
    return origin;
  }
  unlock_origin_object(origin);
  return InvalidReplOriginId;
}

bound::Written written() {
  return {shared_node->written_until, shared_node->state_file_written,
          shared_node->written_durable};
}

// The origin's value for the bound `until`: the bound as an ID, at least 1
// (an origin whose value is 0 has no state; the bound 1 is no higher than 0
// for any ID the node may issue after its first unit).
XLogRecPtr origin_lsn(int64_t until) {
  return static_cast<XLogRecPtr>(std::max<uint64_t>(settings.layout.id_bound(until), 1));
}

const char* bound_text(int64_t until) {
  return timestamp_text(timestamptz_from_unix_ms(settings.layout.unix_ms(until)));
}

}  // namespace

void report_state_file_older(int64_t file_durable, int64_t until) {
  ereport(WARNING,
          (errmsg("snowflake: pg_snowflake/state was older than this data directory"),
           errdetail("It records a durable bound of %s, but the replication origin \"%s\", "
                     "which WAL and checkpoints keep with the data, holds %s: IDs were issued "
                     "here after the file was written, as with a copy of it from a backup, a "
                     "standby or any earlier copy put back. The node takes the later bound, and "
                     "writes the state file anew.",
                     bound_text(file_durable), kBoundOriginName, bound_text(until)),
           errhint("Nothing to do. Never put back an older copy of pg_snowflake/state: it "
                   "cannot vouch for a newer data directory.")));
}

namespace {

// The WARNING of a consult that took the origin's bound.
void report_taken(const bound::FromOrigin& from, int64_t file_durable) {
  if (from.finding == bound::Finding::kStateFileOlder) {
    report_state_file_older(file_durable, from.written.until);
    return;
  }
  ereport(WARNING,
          (errmsg("snowflake: took the bound above this data directory's IDs from the "
                  "replication origin \"%s\"",
                  kBoundOriginName),
           errdetail("pg_snowflake/state %s when the server started; the origin, which WAL and "
                     "checkpoints keep with the data, holds the durable bound %s. The state "
                     "file is written anew with it.",
                     shared_node->state_file_problem, bound_text(from.written.until)),
           errhint("Nothing to do. If the file was damaged, check the storage of the data "
                   "directory.")));
}

}  // namespace

RegisterLock lock_register(bool wait) {
  RegisterLock lock;
  if (compat::replication_origin_states() == 0) return lock;
  if (!IsTransactionState())
    elog(ERROR, "snowflake: the replication origin of the bound used outside a transaction");
  if (wait) {
    LockRelationOid(ReplicationOriginRelationId, RowExclusiveLock);
  } else if (!ConditionalLockRelationOid(ReplicationOriginRelationId, RowExclusiveLock)) {
    lock.busy = true;
    return lock;
  }
  lock.table = true;
  lock.origin = find_origin(wait, &lock.busy);
  if (lock.busy) {
    UnlockRelationOid(ReplicationOriginRelationId, RowExclusiveLock);
    lock.table = false;
  }
  return lock;
}

void unlock_register(const RegisterLock& lock) {
  if (lock.origin != InvalidReplOriginId) unlock_origin_object(lock.origin);
  // Not held to the end of the transaction: a session's long transaction
  // would hold up every CREATE SUBSCRIPTION and origin drop meanwhile.
  if (lock.table) UnlockRelationOid(ReplicationOriginRelationId, RowExclusiveLock);
}

bool register_bound(ReplOriginId origin, int64_t* until) {
  if (origin == InvalidReplOriginId) return false;
  const XLogRecPtr value = replorigin_get_progress(origin, false);
  if (value == InvalidXLogRecPtr) return false;
  *until = settings.layout.timestamp_bound(static_cast<uint64_t>(value));
  return true;
}

void raise_register(ReplOriginId origin, int64_t until) {
  if (origin == InvalidReplOriginId || replorigin_get_progress(origin, false) == InvalidXLogRecPtr)
    return;
  replorigin_advance(origin, origin_lsn(until), InvalidXLogRecPtr, false, true);
}

void consult_register(ReplOriginId origin) {
  if (shared_node->origin_consulted) return;
  int64_t until = 0;
  const bool has_state = register_bound(origin, &until);
  const bound::Written before = written();
  const bound::FromOrigin from = bound::at_origin(bound_state(), before, has_state, until);
  if (from.finding != bound::Finding::kNothing) {
    node_generator()->restore(from.written.until);
    (void)write_state_file(from.written.until, from.written.durable, ERROR);
    if (from.remove_vouches) remove_vouches(WARNING);
    shared_node->written_until = from.written.until;
    shared_node->written_durable = from.written.durable;
    shared_node->state_file_written = true;
    set_bound_state(from.state);
    report_taken(from, bound::origin_value(before));
  }
  shared_node->origin_consulted = true;
}

void consult_register_connected(bool wait) {
  if (shared_node->origin_consulted) return;
  const RegisterLock lock = lock_register(wait);
  if (lock.busy) return;
  LWLockAcquire(shared_node->durable_lock, LW_EXCLUSIVE);
  consult_register(lock.origin);
  LWLockRelease(shared_node->durable_lock);
  unlock_register(lock);
}

// The "snowflake bound register" worker's work: the origin created if it is
// missing, then its first state, the durable bound in force.
void establish_register() {
  SetCurrentStatementStartTimestamp();
  StartTransactionCommand();
  if (replorigin_by_name(kBoundOriginName, true) == InvalidReplOriginId) {
    // Committed before it gets a state: a state is given only to an origin
    // whose row is there for good (else a rolled-back row would leave a state
    // behind that the next origin of its id inherits).
    (void)replorigin_create(kBoundOriginName);
    CommitTransactionCommand();
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
  }
  // No backend between its look-up and its write ("Locks" above).
  LockRelationOid(ReplicationOriginRelationId, ExclusiveLock);
  bool busy = false;
  const ReplOriginId origin = find_origin(true, &busy);
  if (origin != InvalidReplOriginId) {
    if (replorigin_get_progress(origin, false) == InvalidXLogRecPtr) {
      LWLockAcquire(shared_node->durable_lock, LW_EXCLUSIVE);
      if (bound_state() == BoundState::kKnown) {
        const int64_t value = bound::origin_value(written());
        replorigin_advance(origin, origin_lsn(value), InvalidXLogRecPtr, false, true);
        XLogFlush(GetXLogInsertRecPtr());
        ereport(LOG, (errmsg("snowflake: the replication origin \"%s\" keeps the durable bound "
                             "from now on (%s)",
                             kBoundOriginName, bound_text(value))));
      }
      LWLockRelease(shared_node->durable_lock);
    }
    shared_node->register_origin = origin;
    unlock_origin_object(origin);
  }
  CommitTransactionCommand();
}

bool checkpointed_register_bound(uint16 origin, int64_t* until) {
  if (origin == InvalidReplOriginId || compat::replication_origin_states() == 0) return false;
  // The checkpoint's format (origin.c, CheckPointReplicationOrigin): a magic
  // number, one entry per origin with a state, a CRC-32C of all before it.
  // Anything else is not read: the consult after recovery still runs.
  constexpr uint32 kMagic = 0x1257DADE;
  struct Entry {
    ReplOriginId roident;
    XLogRecPtr remote_lsn;
  };
  const int fd = OpenTransientFile("pg_logical/replorigin_checkpoint", O_RDONLY | PG_BINARY);
  if (fd < 0) return false;
  const size_t most =
      sizeof(uint32) + sizeof(Entry) * compat::replication_origin_states() + sizeof(pg_crc32c) + 1;
  char* bytes = static_cast<char*>(palloc(most));
  const ssize_t got = read(fd, bytes, most);
  CloseTransientFile(fd);
  bool found = false;
  uint32 magic = 0;
  if (got >= static_cast<ssize_t>(sizeof(magic) + sizeof(pg_crc32c)) &&
      static_cast<size_t>(got) < most &&
      (static_cast<size_t>(got) - sizeof(magic) - sizeof(pg_crc32c)) % sizeof(Entry) == 0) {
    memcpy(&magic, bytes, sizeof(magic));
    pg_crc32c crc;
    INIT_CRC32C(crc);
    COMP_CRC32C(crc, bytes, got - sizeof(pg_crc32c));
    FIN_CRC32C(crc);
    pg_crc32c stored;
    memcpy(&stored, bytes + got - sizeof(pg_crc32c), sizeof(stored));
    if (magic == kMagic && crc == stored) {
      for (const char* at = bytes + sizeof(magic); at < bytes + got - sizeof(pg_crc32c);
           at += sizeof(Entry)) {
        Entry entry;
        memcpy(&entry, at, sizeof(entry));
        if (entry.roident != origin || entry.remote_lsn == InvalidXLogRecPtr) continue;
        *until = settings.layout.timestamp_bound(static_cast<uint64_t>(entry.remote_lsn));
        found = true;
      }
    }
  }
  pfree(bytes);
  return found;
}

void clear_register() {
  if (compat::replication_origin_states() == 0 || !IsTransactionState()) return;
  const RegisterLock lock = lock_register(true);
  if (lock.origin != InvalidReplOriginId &&
      replorigin_get_progress(lock.origin, false) != InvalidXLogRecPtr) {
    // Its value 0 is no state here (register_bound); WAL-logged, and in the
    // checkpoint pg_upgrade's server writes at its shutdown.
    replorigin_advance(lock.origin, InvalidXLogRecPtr, InvalidXLogRecPtr, true, true);
    ereport(LOG, (errmsg("snowflake: cleared the replication origin \"%s\": it covers none of "
                         "the data pg_upgrade brings",
                         kBoundOriginName)));
  }
  unlock_register(lock);
}

}  // namespace snowflake::pg
