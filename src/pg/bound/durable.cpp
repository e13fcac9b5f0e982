// The durable bound, which keeps the node's IDs unique across restarts,
// crashes and failover: make_durable(), which backends call to raise it, and
// adopt_bound(), by which an operator gives it. The state file
// pg_snowflake/state is state_file.cpp's; the custom WAL resource manager
// that carries the bound to standbys and through crash recovery is
// bound_wal.cpp's.
//
// Durability protocol. The generator never issues an ID of a unit of time at or
// after its durable bound. To go past it, a backend takes durable_lock, writes
// a later bound (the candidate's unit plus the generator's durable interval:
// kDurableIntervalMs, at least four units) as a WAL
// record of our custom resource manager, flushes it, writes it to the state
// file pg_snowflake/state (fsync, durable rename) and releases the lock;
// before the record it raises the replication origin that keeps a second
// copy of the bound, which the same flush makes durable (bound_register.cpp:
// what tells a state file older than its data directory). When
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
// - a crash after the record's flush and before the standbys confirmed it
//   leaves a state file ahead of them; that bound is not used either: at
//   start restore() raises the floor to it, so the first ID is above it and
//   needs a new bound, whose record comes later in WAL and is waited for in
//   turn (the standbys then have both);
// - the cost is one WAL flush and one file fsync per interval, not per ID; a
//   backend raises the bound early (half an interval before it is reached, if
//   the lock is free) so the others rarely wait for it.
// A clean shutdown writes the exact bound (the unit after the last ID)
// instead, so a quick restart does not start ahead of the clock; the file
// records the durable bound in force beside it. WAL and the file hold the
// bound as an ID (Layout::id_bound), which stays true if the layout or the
// epoch changes.
//
// Where the bound comes from when the state file is missing:
// bound_origin.cpp. The decisions (the exact bound, what a start concludes
// from pg_snowflake/, an operator's bound never lowering the one written) are
// src/core/bound.hpp's, which the simulator runs too.
#include "durable.hpp"

#include <algorithm>

#include "../../core/clock.hpp"
#include "bound_register.hpp"
#include "bound_wal.hpp"
#include "../compat.hpp"
#include "../counters.hpp"
#include "../node.hpp"
#include "../node_memory.hpp"
#include "../postgres.hpp"
#include "../registry/registry.hpp"
#include "../settings.hpp"
#include "marks.hpp"
#include "state_file.hpp"
#include "../text.hpp"
#include "../time.hpp"

namespace snowflake::pg {

namespace {

// At a clean shutdown every backend is gone, so the exact bound is known.
void save_exact_bound(int code, Datum) {
  if (code != 0 || shared_node == nullptr) return;
  const int64_t exact =
      bound::exact_at_shutdown(settings.layout, shared_node->generator.last_id.load(),
                               shared_node->generator.durable_until.load());
  if (exact != 0) write_state_file(exact, shared_node->written_durable, LOG);
}

bound::Written written() {
  return {shared_node->written_until, shared_node->state_file_written,
          shared_node->written_durable};
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
// and returns; then the bound is not confirmed, and this call fails (its time
// counted first, from `started_us`, if a backend's wait is being counted).
void wait_for_synchronous_standbys(XLogRecPtr lsn, int64_t until, int64_t started_us = -1) {
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
  if (started_us >= 0) count(kDurableWaitUs, monotonic_us() - started_us);
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

// Makes `until` (or a later bound, bound::to_write) the durable bound: the
// replication origin raised (`origin`, if it has a state), its WAL record
// and the bound's, flushed together, then the state file. The caller holds
// durable_lock exclusively (and the origin's locks); an error leaves the old
// bound in force. Returns the record's position, for the standbys' wait.
XLogRecPtr write_bound(int64_t until, ReplOriginId origin) {
  until = bound::to_write(until, written());
  raise_register(origin, until);
  const XLogRecPtr lsn = log_bound(until);
  write_state_file(until, until, ERROR);
  if (!shared_node->state_file_written) remove_vouches(WARNING);
  shared_node->written_until = until;
  shared_node->written_durable = until;
  shared_node->written_lsn = lsn;
  shared_node->state_file_written = true;
  return lsn;
}

// The start's message about a state file it could not read (a missing one is
// said once the check of the databases concludes, if it must be).
void report_unread(const StateFileRead& file) {
  if (file.unread == bound::Unread::kMissing) return;
  ereport(WARNING,
          (file.unread == bound::Unread::kDamaged ? errcode(ERRCODE_DATA_CORRUPTED)
                                                  : errcode(ERRCODE_IO_ERROR),
           errmsg("snowflake: pg_snowflake/state %s", file.problem),
           errdetail("It holds the bound above every ID this data directory has issued. Until "
                     "the bound is known again snowflake_nextval() waits: once recovery ends "
                     "the node takes it from its replication origin \"snowflake_bound\" if "
                     "that has a state, else it checks its databases for the extension."),
           errhint("Do not put back a copy of the file from a backup or a standby: it would be "
                   "older than this data directory. The server log says next where the bound "
                   "came from, or what to give.")));
}

}  // namespace

// What the start concludes from pg_snowflake/ is bound::at_start's.
void restore_durable_bound() {
  bound::OnDisk disk;
  const StateFileRead file = read_state_file();
  shared_node->register_origin = file.origin_id;
  const uint64_t writer = file.system_identifier;
  disk.state_file = file.read;
  disk.state_until = file.until;
  disk.state_durable = file.durable;
  disk.state_unread = file.unread;
  disk.state_writer = bound::writer_of(writer, GetSystemIdentifier());
  if (!file.read && !IsBinaryUpgrade) report_unread(file);
  strlcpy(shared_node->state_file_problem, file.read ? "" : file.problem,
          sizeof(shared_node->state_file_problem));
  // Not in pg_upgrade's own server: the data it brings comes after.
  disk.given = !IsBinaryUpgrade && read_given_state_file(&disk.given_until);
  char why[sizeof(shared_node->bound_unknown_why)];
  disk.marks = read_unknown_marks(why, sizeof(why));
  bound::Start start = bound::at_start(disk);
  // An older state file put back, told before recovery from the origin's
  // last checkpoint (bound_register.cpp; the bound records after it raise
  // the file in redo). The consult after recovery tells the rest.
  int64_t checkpointed = 0;
  if (start.state == bound::State::kKnown && !IsBinaryUpgrade &&
      checkpointed_register_bound(file.origin_id, &checkpointed)) {
    const bound::FromOrigin from = bound::at_origin(start.state, start.written, true, checkpointed);
    if (from.finding == bound::Finding::kStateFileOlder &&
        write_state_file(from.written.until, from.written.durable, LOG)) {
      report_state_file_older(bound::origin_value(start.written), from.written.until);
      start.written = from.written;
    }
  }
  if (start.take_given) {
    // A bound given for data from another data directory (bound_origin.cpp,
    // "Unknown stays unknown"): the state file's from now on.
    if (write_state_file(start.written.until, start.written.durable, LOG)) {
      remove_unknown_marks(LOG);
      remove_given_state_file(LOG);
    }
    ereport(LOG, (errmsg("snowflake: took the bound in pg_snowflake/given, above the IDs of the "
                         "data directory this one was upgraded from")));
  }
  shared_node->written_until = start.written.until;
  shared_node->written_durable = start.written.durable;
  shared_node->state_file_written = start.written.state_file;
  node_generator()->restore(start.written.until);
  if (start.remove_vouches) remove_vouches(LOG);
  set_bound_state(start.state);
  if (start.reason == bound::Reason::kForeignStateFile) {
    // Marked too, so that the reason outlives the file (removed, or replaced
    // by yet another); an operator's bound answers both.
    char clause[kUnknownMarkMax];
    snprintf(clause, sizeof(clause),
             "this data directory's pg_snowflake/state was written by another system (system "
             "identifier " UINT64_FORMAT "; this one is " UINT64_FORMAT ")",
             writer, GetSystemIdentifier());
    if (!disk.marks || strstr(why, clause) == nullptr) (void)append_unknown_mark(clause, "", LOG);
    if (!read_unknown_marks(why, sizeof(why))) strlcpy(why, clause, sizeof(why));
  }
  if (start.reason == bound::Reason::kMarked || start.reason == bound::Reason::kForeignStateFile) {
    strlcpy(shared_node->bound_unknown_why, why, sizeof(shared_node->bound_unknown_why));
    if (!IsBinaryUpgrade) {
      ereport(
          WARNING,
          (errmsg("snowflake: the bound above this data directory's earlier IDs is unknown"),
           errdetail("%s; snowflake_nextval() refuses until the bound is given.", capitalized(why)),
           errhint("As a superuser, SELECT snowflake_restore_bound('/path/to/old/data') with "
                   "the data directory this one came from, or, if it never issued IDs, "
                   "SELECT snowflake_set_bound(now()).")));
    }
  } else if (start.state == bound::State::kChecking && !IsBinaryUpgrade &&
             !registry_worker_registered()) {
    ereport(WARNING,
            (errmsg("snowflake: pg_snowflake/state %s, and the check of the databases cannot "
                    "run: the snowflake registry worker could not be registered",
                    file.problem),
             errdetail("max_worker_processes = %d leaves it no slot; snowflake_nextval() refuses "
                       "until the bound is known.",
                       max_worker_processes),
             errhint("Raise max_worker_processes by 1 and restart the server; or, as a "
                     "superuser, SELECT snowflake_set_bound(now()) if this data directory never "
                     "issued IDs, else SELECT snowflake_restore_bound('/path/to/old/data').")));
  }
  on_shmem_exit(save_exact_bound, 0);
}

int64_t adopt_bound(int64_t until) {
  const RegisterLock lock = lock_register(true);
  LWLockAcquire(shared_node->durable_lock, LW_EXCLUSIVE);
  consult_register(lock.origin);
  // Never below what the origin holds: this data directory's own IDs (marks
  // kept the start from taking it: bound::at_origin).
  int64_t origin_until = 0;
  if (!register_bound(lock.origin, &origin_until)) origin_until = 0;
  until = bound::adopted(std::max(until, origin_until), written());
  const XLogRecPtr lsn = write_bound(until, lock.origin);
  until = shared_node->written_until;
  LWLockRelease(shared_node->durable_lock);
  unlock_register(lock);
  wait_for_synchronous_standbys(lsn, until);
  node_generator()->restore(until);
  LWLockAcquire(shared_node->durable_lock, LW_EXCLUSIVE);
  // The state file is written: the marks of an unknown bound have had their answer.
  if (bound::answers_marks(bound_state())) remove_unknown_marks(WARNING);
  set_bound_state(BoundState::kKnown);
  LWLockRelease(shared_node->durable_lock);
  return until;
}

// A backend that waits here is counted (snowflake_status.durable_waits), with
// the time until the bound is published or the standbys' wait fails
// (durable_wait_ms); the early raise, which never waits, is not.
void make_durable(int64_t timestamp, bool wait) {
  Generator* generator = node_generator();
  const int64_t started_us = wait ? monotonic_us() : -1;
  if (wait) count(kDurableWaits);
  if (unlikely(!bound::may_make_durable(bound_state()))) {
    if (!wait) return;
    require_known_bound();
  }
  // The replication origin's locks before durable_lock, and only when a bound
  // may be written (written_until and origin_consulted only ever go one way,
  // so a look without the lock that finds nothing to write is final).
  RegisterLock lock;
  if (generator->durable_bound_near(shared_node->written_until, timestamp) ||
      !shared_node->origin_consulted) {
    lock = lock_register(wait);
    if (lock.busy) return;
  }
  if (wait) {
    LWLockAcquire(shared_node->durable_lock, LW_EXCLUSIVE);
  } else if (!LWLockConditionalAcquire(shared_node->durable_lock, LW_EXCLUSIVE)) {
    unlock_register(lock);
    return;
  }
  // Before the first ID of this start: is the state file older than the data
  // directory? (bound_register.cpp)
  if (unlikely(!shared_node->origin_consulted)) consult_register(lock.origin);
  if (generator->durable_bound_near(shared_node->written_until, timestamp)) {
    (void)write_bound(generator->durable_until_after(timestamp), lock.origin);
  }
  const int64_t until = shared_node->written_until;
  const XLogRecPtr lsn = shared_node->written_lsn;
  LWLockRelease(shared_node->durable_lock);
  unlock_register(lock);

  // An early raise (the caller already holds its IDs) does not wait: a later
  // call publishes the bound once the standbys have it.
  if (wait) {
    wait_for_synchronous_standbys(lsn, until, started_us);
  } else if (!synchronous_standbys_have(lsn)) {
    return;
  }
  generator->publish_durable(until);
  if (wait) count(kDurableWaitUs, monotonic_us() - started_us);
}

}  // namespace snowflake::pg
