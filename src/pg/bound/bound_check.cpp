// The check of a node that started without pg_snowflake/state (bound_origin.cpp,
// "Where the bound comes from"): does any database have the snowflake
// extension (one not vouched for)? A process stays connected to one database
// for life, so the registry worker, which is connected to none, goes through
// pg_database in OID order and has each database asked by a short-lived
// background worker; it does not wait for it: its loop (leases included) goes
// on, and it collects the answer once that worker has stopped (the postmaster
// sets its latch then). A check that takes long (a lock held on the
// database) is logged, not waited on.
//
// When no background worker slot is free (max_worker_processes is small, or
// parallel query or other extensions hold the slots), the registry worker,
// which holds a slot of its own, asks the database itself: it exits, and its
// next incarnation, restarted by the postmaster, connects to that database
// before anything else, answers, and exits again; the incarnation after it,
// connected to no database (it must not hold one: DROP DATABASE waits for
// every connection), goes on. So the check's progress lives in shared memory
// (BoundCheck, node_memory.hpp). A database that cannot be asked counts as
// having the extension: only a database known to have none lets the node
// trust the clock.
#include "bound_check.hpp"

#include "bound_register.hpp"
#include "durable.hpp"
#include "../library.hpp"
#include "marks.hpp"
#include "state_file.hpp"
#include "../node_memory.hpp"
#include "../postgres.hpp"

extern "C" {
#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/extension.h"
#include "postmaster/bgworker.h"
#include "tcop/tcopprot.h"
#include "utils/snapmgr.h"
}

namespace snowflake::pg {

namespace {

// What a database's worker leaves in shared_node->bound_check_answer.
constexpr uint32 kNoAnswer = 0;
constexpr uint32 kAbsent = 1;
constexpr uint32 kPresent = 2;

// How many database names an error message lists.
constexpr int kNamesShown = 3;

struct Database {
  Oid oid;
  char name[NAMEDATALEN];
};

// The databases one can connect to (an invalid one, left by an interrupted
// DROP DATABASE, is on its way out and holds nothing), in `context`.
List* list_databases(MemoryContext context) {
  List* databases = NIL;
  MemoryContext caller = CurrentMemoryContext;  // a commit leaves TopMemoryContext current
  SetCurrentStatementStartTimestamp();
  StartTransactionCommand();
  (void)GetTransactionSnapshot();
  Relation relation = table_open(DatabaseRelationId, AccessShareLock);
  TableScanDesc scan = table_beginscan_catalog(relation, 0, nullptr);
  HeapTuple tuple;
  while ((tuple = heap_getnext(scan, ForwardScanDirection)) != nullptr) {
    auto* form = reinterpret_cast<Form_pg_database>(GETSTRUCT(tuple));
    if (database_is_invalid_form(form)) continue;
    MemoryContext previous = MemoryContextSwitchTo(context);
    auto* database = static_cast<Database*>(palloc(sizeof(Database)));
    database->oid = form->oid;
    strlcpy(database->name, NameStr(form->datname), sizeof(database->name));
    databases = lappend(databases, database);
    MemoryContextSwitchTo(previous);
  }
  table_endscan(scan);
  table_close(relation, AccessShareLock);
  CommitTransactionCommand();
  MemoryContextSwitchTo(caller);
  return databases;
}

bool still_exists(Oid database, MemoryContext context) {
  ListCell* cell;
  foreach (cell, list_databases(context))
    if (static_cast<const Database*>(lfirst(cell))->oid == database) return true;
  return false;
}

// Who asks the database in BoundCheck::asked.
enum Asker : uint32 {
  kNobody = 0,
  kCheckWorker,  // a "snowflake bound check" worker this incarnation started
  kSelfNext,     // the registry worker's next incarnation
  kSelfDone,     // an incarnation has asked it (and answered, unless it failed)
};

// After this long a database's check is logged as slow.
constexpr int64_t kSlowCheckMs = 10000;

BoundCheck& check() {
  return shared_node->bound_check;
}

BackgroundWorkerHandle* check_worker = nullptr;  // this incarnation's, while it runs
bool logged_slow = false;

// The first database after `after` in OID order; false if there is none.
bool next_database(Oid after, Database* next, MemoryContext context) {
  bool found = false;
  ListCell* cell;
  foreach (cell, list_databases(context)) {
    const auto* database = static_cast<const Database*>(lfirst(cell));
    if (database->oid > after && (!found || database->oid < next->oid)) {
      *next = *database;
      found = true;
    }
  }
  return found;
}

void add_found(const char* name, bool unchecked) {
  BoundCheck& c = check();
  c.found_count++;
  char quoted[NAMEDATALEN + 40];
  snprintf(quoted, sizeof(quoted), "%s\"%s\"%s", c.found_shown > 0 ? ", " : "", name,
           unchecked ? " (which could not be checked)" : "");
  // Whole names only, leaving room for " and N more".
  constexpr size_t kMoreRoom = 24;
  if (c.found_shown < kNamesShown &&
      strlen(c.found) + strlen(quoted) + kMoreRoom < sizeof(c.found)) {
    strlcat(c.found, quoted, sizeof(c.found));
    c.found_shown++;
  }
}

// The answer to the database asked, now that its asker has stopped.
void collect(MemoryContext context) {
  BoundCheck& c = check();
  const uint64 answer_word = pg_atomic_read_u64(&c.answer);
  const uint32 answer =
      static_cast<Oid>(answer_word >> 32) == c.asked ? static_cast<uint32>(answer_word) : kNoAnswer;
  if (answer == kPresent || (answer == kNoAnswer && still_exists(c.asked, context)))
    add_found(c.asked_name, answer == kNoAnswer);
  c.done_through = c.asked;
  c.asked = InvalidOid;
  c.asker = kNobody;
  pg_atomic_fetch_add_u32(&c.progress, 1);
}

void conclude() {
  BoundCheck& c = check();
  if (c.found_count == 0) {
    ereport(LOG, (errmsg("snowflake: pg_snowflake/state %s at start, and no database has the "
                         "extension: this data directory has issued no IDs",
                         shared_node->state_file_problem)));
    conclude_bound_check(nullptr);
    return;
  }
  char found[sizeof(c.found) + 32];
  if (c.found_count > c.found_shown)
    snprintf(found, sizeof(found), "%s and %d more", c.found, c.found_count - c.found_shown);
  else
    strlcpy(found, c.found, sizeof(found));
  ereport(WARNING,
          (errmsg("snowflake: pg_snowflake/state %s at start, yet the extension is in "
                  "database %s",
                  shared_node->state_file_problem, found),
           errdetail("This data directory's replication origin \"snowflake_bound\" has no state "
                     "to give the bound either, so the bound above the IDs it issued before is "
                     "unknown, and snowflake_nextval() refuses until it is given."),
           errhint("As a superuser, if this data directory was copied or upgraded from another, "
                   "SELECT snowflake_restore_bound('/path/to/that/data/directory'); else give a "
                   "time later than the last ID it may have issued, SELECT "
                   "snowflake_set_bound('...'), or, if it never issued IDs, SELECT "
                   "snowflake_set_bound(now()).")));
  conclude_bound_check(found);
}

// Starts a worker that asks c.asked; false if no worker slot is free.
bool start_check_worker() {
  const BoundCheck& c = check();
  BackgroundWorker worker;
  memset(&worker, 0, sizeof(worker));
  worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
  worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
  worker.bgw_restart_time = BGW_NEVER_RESTART;
  worker_library_name(worker.bgw_library_name, sizeof(worker.bgw_library_name));
  strlcpy(worker.bgw_function_name, "snowflake_bound_check_main", BGW_MAXLEN);
  snprintf(worker.bgw_name, BGW_MAXLEN, "snowflake bound check of %s", c.asked_name);
  strlcpy(worker.bgw_type, "snowflake bound check", BGW_MAXLEN);
  worker.bgw_main_arg = ObjectIdGetDatum(c.asked);
  worker.bgw_notify_pid = MyProcPid;
  // The handle outlives the registry worker's round (its memory is reset).
  MemoryContext previous = MemoryContextSwitchTo(TopMemoryContext);
  const bool started = RegisterDynamicBackgroundWorker(&worker, &check_worker);
  MemoryContextSwitchTo(previous);
  return started;
}

// Whether the database of the current connection has the extension, not
// vouched for; leaves the answer for `database`. The first asker consults
// the replication origin before (bound_register.cpp): with a state it gives
// the bound, and the check ends.
void answer_here(Oid database) {
  SetCurrentStatementStartTimestamp();
  StartTransactionCommand();
  consult_register_connected(false);
  const Oid extension = get_extension_oid("snowflake", true);
  const bool present = OidIsValid(extension) && !vouched(extension);
  CommitTransactionCommand();
  pg_atomic_write_u64(&shared_node->bound_check.answer,
                      (uint64{database} << 32) | (present ? kPresent : kAbsent));
}

// One step while the check waits for an asker: returns how soon to look again.
long wait_for_asker(MemoryContext context) {
  BoundCheck& c = check();
  if (c.asker == kSelfNext || (c.asker == kCheckWorker && check_worker == nullptr)) {
    c.asker = kNobody;  // asked by an earlier incarnation that did not finish: ask again
    return 0;
  }
  if (c.asker == kCheckWorker) {
    pid_t pid;
    if (check_worker != nullptr && GetBackgroundWorkerPid(check_worker, &pid) != BGWH_STOPPED) {
      const int64_t waited_ms = (GetCurrentTimestamp() - c.asked_at) / 1000;
      if (waited_ms >= kSlowCheckMs && !logged_slow) {
        logged_slow = true;
        ereport(LOG,
                (errmsg("snowflake: the check of database \"%s\" for the extension has taken "
                        "%lld s so far",
                        c.asked_name, static_cast<long long>(waited_ms / 1000)),
                 errdetail("Process %d waits to connect to it, most likely for a lock held on "
                           "the database (ALTER DATABASE, DROP DATABASE, CREATE DATABASE with "
                           "it as template); snowflake_nextval() refuses until the check ends.",
                           static_cast<int>(pid))));
      }
      return 1000;
    }
    pfree(check_worker);
    check_worker = nullptr;
  }
  collect(context);
  return 0;
}

}  // namespace

void ask_pending_database_here() {
  if (shared_node == nullptr || bound_state() != BoundState::kChecking) return;
  BoundCheck& c = check();
  if (c.asker != kSelfNext) return;
  // If connecting fails (the database was dropped meanwhile), no answer is
  // left, and the next incarnation reads that.
  c.asker = kSelfDone;
  pg_atomic_fetch_add_u32(&c.progress, 1);
  pqsignal(SIGTERM, die);
  HOLD_CANCEL_INTERRUPTS();  // a pg_cancel_backend() must not cost the answer
  BackgroundWorkerInitializeConnectionByOid(c.asked, InvalidOid, BGWORKER_BYPASS_ALLOWCONN);
  answer_here(c.asked);
  RESUME_CANCEL_INTERRUPTS();
  // Exit code 1: restarted, connected to no database, it goes on.
  proc_exit(1);
}

long step_bound_check() {
  if (bound_state() != BoundState::kChecking) return -1;
  MemoryContext context =
      AllocSetContextCreate(CurrentMemoryContext, "snowflake bound check", ALLOCSET_SMALL_SIZES);
  // Nothing here waits long; a cancel is for the registry request in flight.
  HOLD_CANCEL_INTERRUPTS();
  BoundCheck& c = check();
  long timeout_ms = 0;
  while (timeout_ms == 0) {
    // The replication origin answered (answer_here), or an operator.
    if (bound_state() != BoundState::kChecking) {
      timeout_ms = -1;
      break;
    }
    if (OidIsValid(c.asked) && c.asker != kNobody) {
      timeout_ms = wait_for_asker(context);
      continue;
    }
    Database next;
    if (!OidIsValid(c.asked)) {
      if (!next_database(c.done_through, &next, context)) {
        conclude();
        timeout_ms = -1;
        break;
      }
      LWLockAcquire(shared_node->durable_lock, LW_EXCLUSIVE);
      c.asked = next.oid;
      strlcpy(c.asked_name, next.name, sizeof(c.asked_name));
      LWLockRelease(shared_node->durable_lock);
    }
    c.asked_at = GetCurrentTimestamp();
    pg_atomic_write_u64(&c.answer, 0);
    logged_slow = false;
    if (start_check_worker()) {
      c.asker = kCheckWorker;
      continue;
    }
    if (!c.logged_no_slot) {
      c.logged_no_slot = true;
      ereport(LOG, (errmsg("snowflake: no background worker slot is free for the check of "
                           "database \"%s\"; the registry worker checks the databases itself",
                           c.asked_name),
                    errdetail("It restarts for each database, every %d s, so the check takes "
                              "longer; raise max_worker_processes by 1 to avoid that.",
                              kRegistryRestartSeconds)));
    }
    c.asker = kSelfNext;
    pg_atomic_fetch_add_u32(&c.progress, 1);
    // Exit code 1: restarted, the next incarnation asks the database.
    proc_exit(1);
  }
  RESUME_CANCEL_INTERRUPTS();
  MemoryContextDelete(context);
  return timeout_ms;
}

// A number that changes whenever the check moves on.
static uint32_t bound_check_progress() {
  return pg_atomic_read_u32(&shared_node->bound_check.progress);
}

void wait_while_the_check_moves() {
  constexpr long kPollMs = 50;
  uint32_t progress = bound_check_progress();
  TimestampTz moved_at = GetCurrentTimestamp();
  while (bound_state() == BoundState::kChecking) {
    const TimestampTz now = GetCurrentTimestamp();
    if (bound_check_progress() != progress) {
      progress = bound_check_progress();
      moved_at = now;
    } else if (now - moved_at >= kCheckStallMs * 1000) {
      return;
    }
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, kPollMs,
                    PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
  }
}

}  // namespace snowflake::pg

using namespace snowflake::pg;

extern "C" PGDLLEXPORT void snowflake_bound_check_main(Datum);

// One database's answer: is the extension there (and not vouched for)?
void snowflake_bound_check_main(Datum database) {
  pqsignal(SIGTERM, die);
  BackgroundWorkerUnblockSignals();
  BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(database), InvalidOid,
                                            BGWORKER_BYPASS_ALLOWCONN);
  answer_here(DatumGetObjectId(database));
  proc_exit(0);
}
