// The "snowflake bound register" worker, which sets up the replication origin
// of the bound (bound_register.cpp states why an origin and its protocol):
// the registry worker starts it once per start on a primary, once recovery
// is over and the bound is known (step_register), because the origin's
// catalog, pg_replication_origin, is read only by a backend connected to a
// database, which the registry worker is not. The worker consults the origin
// at once (a state file older than the data directory is told then, not at
// the first ID), and, if the origin has no state, creates it and gives it its
// first state (establish_register). A failure (no free origin state, no free
// worker slot, max_replication_slots or from 18
// max_active_replication_origins at 0) is a WARNING once and a retry a minute
// later, never an error of snowflake_nextval().
#include <cstring>

#include "../compat.hpp"
#include "../library.hpp"
#include "../node_memory.hpp"
#include "bound_register.hpp"
#include "durable.hpp"

extern "C" {
#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "postmaster/bgworker.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
}

namespace snowflake::pg {

namespace {

constexpr long kEstablishRetryMs = 60 * 1000;
constexpr long kLockRetryMs = 1000;

// The registry worker's handle of the "snowflake bound register" worker it
// started, while that one runs, and when to look again.
BackgroundWorkerHandle* register_worker = nullptr;
TimestampTz next_look = 0;

// The database the "snowflake bound register" worker connects to (the origin
// is in a shared catalog, but a backend must be connected to some database
// to read or write a catalog other than the few the relation cache loads
// without one): the first one in OID order that is neither a template nor
// closed to connections, else template1.
Oid register_database() {
  Oid chosen = InvalidOid;
  MemoryContext caller = CurrentMemoryContext;
  SetCurrentStatementStartTimestamp();
  StartTransactionCommand();
  (void)GetTransactionSnapshot();
  Relation relation = table_open(DatabaseRelationId, AccessShareLock);
  TableScanDesc scan = table_beginscan_catalog(relation, 0, nullptr);
  HeapTuple tuple;
  while ((tuple = heap_getnext(scan, ForwardScanDirection)) != nullptr) {
    const auto* form = reinterpret_cast<Form_pg_database>(GETSTRUCT(tuple));
    if (database_is_invalid_form(const_cast<Form_pg_database>(form)) || form->datistemplate ||
        !form->datallowconn)
      continue;
    if (!OidIsValid(chosen) || form->oid < chosen) chosen = form->oid;
  }
  table_endscan(scan);
  table_close(relation, AccessShareLock);
  CommitTransactionCommand();
  MemoryContextSwitchTo(caller);
  return OidIsValid(chosen) ? chosen : Oid{Template1DbOid};
}

bool start_register_worker() {
  BackgroundWorker worker;
  memset(&worker, 0, sizeof(worker));
  worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
  worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
  worker.bgw_restart_time = BGW_NEVER_RESTART;
  worker_library_name(worker.bgw_library_name, sizeof(worker.bgw_library_name));
  strlcpy(worker.bgw_function_name, "snowflake_bound_register_main", BGW_MAXLEN);
  strlcpy(worker.bgw_name, "snowflake bound register", BGW_MAXLEN);
  strlcpy(worker.bgw_type, "snowflake bound register", BGW_MAXLEN);
  worker.bgw_main_arg = ObjectIdGetDatum(register_database());
  worker.bgw_notify_pid = MyProcPid;
  MemoryContext previous = MemoryContextSwitchTo(TopMemoryContext);
  const bool started = RegisterDynamicBackgroundWorker(&worker, &register_worker);
  MemoryContextSwitchTo(previous);
  return started;
}

// Whether the origin last seen has a state (a look at shared memory only).
bool register_has_state() {
  const ReplOriginId origin = shared_node->register_origin;
  return origin != InvalidReplOriginId &&
         replorigin_get_progress(origin, false) != InvalidXLogRecPtr;
}

}  // namespace

long step_register() {
  if (RecoveryInProgress() || bound_state() != BoundState::kKnown) return -1;
  if (compat::replication_origin_states() == 0) {
    if (!shared_node->register_warned) {
      shared_node->register_warned = true;
      ereport(WARNING,
              (errmsg("snowflake: %s = 0 leaves no replication origin state for the bound",
                      compat::kReplicationOriginStatesSetting),
               errdetail("The replication origin \"%s\" keeps a second copy of the durable "
                         "bound with the data directory; without it a copy of "
                         "pg_snowflake/state from a backup or a standby, put back, is trusted "
                         "as the current one, and a missing or damaged one is answered only by "
                         "the check of the databases.",
                         kBoundOriginName),
               errhint("Set %s to 1 or more (one more than the server's own logical "
                       "replication needs) and restart the server.",
                       compat::kReplicationOriginStatesSetting)));
    }
    return -1;
  }
  if (register_worker != nullptr) {
    pid_t pid;
    if (GetBackgroundWorkerPid(register_worker, &pid) != BGWH_STOPPED) return kLockRetryMs;
    pfree(register_worker);
    register_worker = nullptr;
  }
  const TimestampTz now = GetCurrentTimestamp();
  if (now < next_look) return static_cast<long>((next_look - now) / 1000) + 1;
  // Looked at again every minute: an operator may drop it. Once per start the
  // worker runs whatever it finds: it consults the origin, before any ID.
  next_look = now + static_cast<TimestampTz>(kEstablishRetryMs) * 1000;
  if (shared_node->origin_consulted && register_has_state()) return kEstablishRetryMs;
  if (!start_register_worker() && !shared_node->register_warned) {
    shared_node->register_warned = true;
    ereport(WARNING,
            (errmsg("snowflake: no background worker slot is free to set up the replication "
                    "origin \"%s\" for the bound",
                    kBoundOriginName),
             errdetail("The origin keeps a second copy of the durable bound with the data "
                       "directory; until it has one, a copy of pg_snowflake/state from a backup "
                       "or a standby, put back, is trusted as the current one. The registry "
                       "worker tries again every %ld s.",
                       kEstablishRetryMs / 1000),
             errhint("Raise max_worker_processes by 1 and restart the server.")));
  }
  return kEstablishRetryMs;
}

}  // namespace snowflake::pg

using namespace snowflake::pg;

extern "C" PGDLLEXPORT void snowflake_bound_register_main(Datum);

// Sets up the replication origin of the bound, connected to `database`; a
// failure is a WARNING, once (the registry worker tries again a minute later).
void snowflake_bound_register_main(Datum database) {
  pqsignal(SIGTERM, die);
  BackgroundWorkerUnblockSignals();
  BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(database), InvalidOid,
                                            BGWORKER_BYPASS_ALLOWCONN);
  MemoryContext caller = CurrentMemoryContext;
  PG_TRY();
  {
    // Is the state file older than the data directory? Told at once, not at
    // the first ID: a stop before it would leave the older file to
    // pg_upgradecluster's hook or to snowflake_restore_bound().
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    consult_register_connected(true);
    CommitTransactionCommand();
    establish_register();
  }
  PG_CATCH();
  {
    MemoryContextSwitchTo(caller);
    ErrorData* error = CopyErrorData();
    FlushErrorState();
    AbortCurrentTransaction();
    if (!shared_node->register_warned) {
      shared_node->register_warned = true;
      ereport(WARNING,
              (errmsg("snowflake: could not set up the replication origin \"%s\" for the bound",
                      kBoundOriginName),
               errdetail("%s. The origin keeps a second copy of the durable bound with the data "
                         "directory; until it has one, a copy of pg_snowflake/state from a backup "
                         "or a standby, put back, is trusted as the current one. The registry "
                         "worker tries again every %ld s.",
                         error->message, kEstablishRetryMs / 1000),
               errhint("Raise %s by 1 and restart the server.",
                       compat::kReplicationOriginStatesSetting)));
    }
  }
  PG_END_TRY();
  proc_exit(0);
}
