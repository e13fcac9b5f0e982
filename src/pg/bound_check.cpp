// The check of a node that started without pg_snowflake/state (durable.cpp,
// "Where the bound comes from"): does any database have the snowflake
// extension? A process stays connected to one database for life, so the
// registry worker, which is connected to none, reads pg_database and starts
// one short-lived background worker per database, one after another; each
// looks the extension up in its catalog and leaves the answer in shared
// memory. A database that cannot be asked counts as having it: only a
// database known to have no extension lets the node trust the clock.
#include "bound_check.hpp"

#include "durable.hpp"
#include "node_memory.hpp"
#include "postgres.hpp"

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

// Asks `database`'s worker; false if no worker slot is free.
bool ask(const Database& database, uint32* answer) {
  BackgroundWorker worker;
  memset(&worker, 0, sizeof(worker));
  worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
  worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
  worker.bgw_restart_time = BGW_NEVER_RESTART;
  strlcpy(worker.bgw_library_name, "snowflake", BGW_MAXLEN);
  strlcpy(worker.bgw_function_name, "snowflake_bound_check_main", BGW_MAXLEN);
  snprintf(worker.bgw_name, BGW_MAXLEN, "snowflake bound check of %s", database.name);
  strlcpy(worker.bgw_type, "snowflake bound check", BGW_MAXLEN);
  worker.bgw_main_arg = ObjectIdGetDatum(database.oid);
  worker.bgw_notify_pid = MyProcPid;
  pg_atomic_write_u32(&shared_node->bound_check_answer, kNoAnswer);
  BackgroundWorkerHandle* handle = nullptr;
  if (!RegisterDynamicBackgroundWorker(&worker, &handle)) return false;
  (void)WaitForBackgroundWorkerShutdown(handle);
  pfree(handle);
  *answer = pg_atomic_read_u32(&shared_node->bound_check_answer);
  return true;
}

}  // namespace

bool check_bound() {
  MemoryContext context =
      AllocSetContextCreate(CurrentMemoryContext, "snowflake bound check", ALLOCSET_SMALL_SIZES);
  List* databases = list_databases(context);
  StringInfoData found;
  initStringInfo(&found);
  int found_count = 0;
  ListCell* cell;
  foreach (cell, databases) {
    const auto* database = static_cast<const Database*>(lfirst(cell));
    uint32 answer = kNoAnswer;
    if (!ask(*database, &answer)) {
      MemoryContextDelete(context);
      return false;
    }
    if (answer == kAbsent || (answer == kNoAnswer && !still_exists(database->oid, context)))
      continue;
    if (++found_count <= kNamesShown)
      appendStringInfo(&found, "%s\"%s\"%s", found_count > 1 ? ", " : "", database->name,
                       answer == kNoAnswer ? " (which could not be checked)" : "");
  }
  if (found_count > kNamesShown)
    appendStringInfo(&found, " and %d more", found_count - kNamesShown);

  if (found_count == 0) {
    ereport(LOG, (errmsg("snowflake: pg_snowflake/state was missing at start, and no database "
                         "has the extension: this data directory has issued no IDs")));
    conclude_bound_check(nullptr);
  } else {
    ereport(WARNING,
            (errmsg("snowflake: pg_snowflake/state was missing at start, yet the extension is in "
                    "database %s",
                    found.data),
             errdetail("This data directory was made by pg_upgrade, or restored or copied "
                       "without pg_snowflake/; the bound above the IDs it issued before is "
                       "unknown, so snowflake_nextval() refuses until it is given."),
             errhint("As a superuser, SELECT snowflake_restore_bound('/path/to/old/data') with "
                     "the data directory this one came from, or, if it never issued IDs, "
                     "SELECT snowflake_set_bound(now()).")));
    conclude_bound_check(found.data);
  }
  MemoryContextDelete(context);
  return true;
}

}  // namespace snowflake::pg

using namespace snowflake::pg;

extern "C" PGDLLEXPORT void snowflake_bound_check_main(Datum);

// One database's answer: is the extension there?
void snowflake_bound_check_main(Datum database) {
  pqsignal(SIGTERM, die);
  BackgroundWorkerUnblockSignals();
  BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(database), InvalidOid,
                                            BGWORKER_BYPASS_ALLOWCONN);
  SetCurrentStatementStartTimestamp();
  StartTransactionCommand();
  const bool present = OidIsValid(get_extension_oid("snowflake", true));
  CommitTransactionCommand();
  pg_atomic_write_u32(&shared_node->bound_check_answer, present ? kPresent : kAbsent);
  proc_exit(0);
}
