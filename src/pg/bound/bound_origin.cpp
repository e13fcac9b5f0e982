// The bound's origin when pg_snowflake/state is missing or does not cover
// the data, and what creations and drops of the extension record (durable.cpp
// states the durability protocol).
//
// Where the bound comes from (BoundState). The postmaster reads
// pg_snowflake/ at start. A data directory that has issued IDs, or in which
// the extension was created under the preload, has a state file
// (note_extension_created writes an empty bound); so a missing file means a
// new data directory, or one filled from another without pg_snowflake/: by
// pg_upgrade (which copies only relations and catalogs), or a copy or restore
// that skipped it, or a file removed. A damaged or unreadable one counts as
// missing, its reason kept for the messages. Once recovery is over the
// replication origin that keeps a second copy of the durable bound answers
// first, if it has a state (bound_register.cpp: a copy or restore carries it,
// pg_upgrade does not). Else only the databases can tell, so the node starts
// "checking": the registry worker looks for the extension in every database
// (bound_check.cpp). Found nowhere, the bound is known (nothing was issued);
// found, it is unknown, and make_durable refuses every ID until an operator
// gives the bound (adopt_bound: the old data directory's state file, or a
// time). A replayed bound record makes it known too: it is above every ID the
// primary issued before it. No ID is ever issued under an unknown bound, and
// the hot path pays nothing for this: a node without a bound reaches
// make_durable on its first ID.
//
// Unknown stays unknown. A bound found unknown is marked on disk
// (pg_snowflake/unknown, a line per reason) before anything relies on it, and
// the marks outlast restarts, drops and re-creations of the extension: only
// an operator's bound (adopt_bound) or a replayed bound record removes them.
// Four events mark the bound unknown, each a way data this data directory's
// bound does not cover can arrive or hide:
// - the start finds a state file another system wrote (its system
//   identifier, which version 2 of the file records, is not this cluster's):
//   pg_snowflake/ copied from another node; its bound says nothing of this
//   data directory's IDs (restore_durable_bound, core/bound.hpp; a file of
//   1.6 or earlier cannot say, and is trusted);
// - the check finds the extension (conclude_bound_check);
// - the extension is dropped while the bound is not known: its tables keep
//   the IDs it issued, and a check after the drop would find nothing;
// - pg_upgrade brings databases into the data directory: its server runs in
//   binary-upgrade mode, where the extension's creation (preloaded) or the
//   library's loading (not preloaded: pg_upgrade's checks and its restore of
//   the extension's C functions load it) marks it. A state file vouches only
//   for the data its own data directory issued, so one written before
//   pg_upgrade (a new cluster tried out first) does not cover what arrives.
//   The bound that does is the old data directory's: Debian's
//   pg_upgradecluster hook copies its state file to pg_snowflake/given before
//   pg_upgrade runs, and the next start takes it (restore_durable_bound).
//
// Creations. Every creation of the extension (CREATE EXTENSION, with CASCADE,
// in a function or a DO block, pg_restore) inserts its pg_extension row; the
// object access hook below sees that insertion (not a CREATE EXTENSION IF NOT
// EXISTS that skipped, nor an ALTER EXTENSION UPDATE) and, with the preload,
// calls note_extension_created(). Without the preload the hook is not there
// yet when the row is inserted, so the creation ends by calling
// snowflake_note_created() (the install script's last lines, or those of
// snowflake--1.4--1.5.sql in a creation of an older version through the
// update scripts), which acts only if the extension's members were all made
// by the current transaction. Without the preload no ID can be
// issued on this server, so, if the data directory has no state file and no
// marks, it leaves a vouch in pg_snowflake/ (marks.cpp): this database's
// extension (that OID, in this database or a database copied from it as a
// template) issued nothing here; the check counts it as absent. A copy or
// pg_upgrade without pg_snowflake/ has no vouch, and the vouches are removed
// once the state file exists, so a copy that skips only the state file is not
// trusted on their word. What no hook sees (doc/backups.md, "A bound found
// unknown stays unknown"; doc/model.md, assumptions O6 and O7): a copy that
// never ran with the preload, in which the extension is dropped and created
// again before the preload is added, vouches for the new extension; and the
// IDs a dropped extension left in its tables (a drop while the bound is known
// marks nothing) are no longer found by the check once pg_snowflake/ is lost
// (a copy without it, pg_upgrade without the hook, which then loads nothing).
// A dump restored into a new cluster cannot be told from a new
// node's data here; from 1.8 its snowflake_dump_bound rows bring the old
// node's bound (carrier.cpp).
#include "bound_check.hpp"
#include "bound_register.hpp"
#include "../boundary.hpp"
#include "durable.hpp"
#include "../node.hpp"
#include "../node_memory.hpp"
#include "../postgres.hpp"
#include "../registry/registry.hpp"
#include "marks.hpp"
#include "state_file.hpp"
#include "../text.hpp"

extern "C" {
#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "commands/dbcommands.h"
#include "utils/fmgroids.h"
#include "utils/snapmgr.h"
}

namespace snowflake::pg {

namespace {

// What to give when the bound is unknown after a start without a readable
// state file: safe to the letter whatever happened (a file removed, damaged,
// or a copy or pg_upgrade without it), this data directory's own state file
// never being an answer (snowflake_restore_bound refuses it).
constexpr char kGiveBoundHint[] =
    "if this data directory was copied or upgraded from another, SELECT "
    "snowflake_restore_bound('/path/to/that/data/directory'); else give a time later than the "
    "last ID it may have issued, SELECT snowflake_set_bound('...'), or, if it never issued IDs, "
    "SELECT snowflake_set_bound(now())";

// Whether this database has snowflake_set_bound() (and so
// snowflake_restore_bound(): extension version 1.4 and later), in any schema.
bool has_bound_functions() {
  CatCList* functions =
      SearchSysCacheList1(PROCNAMEARGSNSP, CStringGetDatum("snowflake_set_bound"));
  const bool found = functions->n_members > 0;
  ReleaseSysCacheList(functions);
  return found;
}

void refuse_unchecked() {
  ereport(ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("snowflake cannot check whether this data directory has issued IDs"),
           errdetail("pg_snowflake/state %s when the server started, this data directory's "
                     "replication origin \"snowflake_bound\" has no state to give the bound, "
                     "and the check of the databases runs in the snowflake registry worker, which "
                     "could not be registered: max_worker_processes = %d leaves it no slot.",
                     shared_node->state_file_problem, max_worker_processes),
           errhint("Raise max_worker_processes by 1 and restart the server; or, as a superuser, "
                   "%s.",
                   kGiveBoundHint)));
}

// Whether every member of `extension` was made by the current transaction:
// then it is being created, not updated.
bool members_all_new(Oid extension) {
  Relation depend = table_open(DependRelationId, AccessShareLock);
  ScanKeyData keys[2];
  ScanKeyInit(&keys[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
              ObjectIdGetDatum(ExtensionRelationId));
  ScanKeyInit(&keys[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
              ObjectIdGetDatum(extension));
  SysScanDesc scan = systable_beginscan(depend, DependReferenceIndexId, true, nullptr, 2, keys);
  bool all_new = true;
  HeapTuple tuple;
  while (all_new && HeapTupleIsValid(tuple = systable_getnext(scan))) {
    const auto* form = reinterpret_cast<Form_pg_depend>(GETSTRUCT(tuple));
    if (form->deptype == DEPENDENCY_EXTENSION)
      all_new = TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tuple->t_data));
  }
  systable_endscan(scan);
  table_close(depend, AccessShareLock);
  return all_new;
}

// The name of the current database, quoted, for messages; its OID outside a
// transaction.
const char* quoted_database() {
  const char* name = IsTransactionState() ? get_database_name(MyDatabaseId) : nullptr;
  return name != nullptr ? psprintf("\"%s\"", name) : psprintf("with OID %u", MyDatabaseId);
}

// Whether the extension `extension` is snowflake. Its row may be this
// command's own and not yet visible to catalog lookups: read with
// SnapshotSelf.
bool is_snowflake(Oid extension) {
  Relation relation = table_open(ExtensionRelationId, AccessShareLock);
  ScanKeyData key;
  ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
              ObjectIdGetDatum(extension));
  SysScanDesc scan = systable_beginscan(relation, ExtensionOidIndexId, true, SnapshotSelf, 1, &key);
  const HeapTuple tuple = systable_getnext(scan);
  const bool snowflake =
      HeapTupleIsValid(tuple) &&
      strcmp(NameStr(reinterpret_cast<Form_pg_extension>(GETSTRUCT(tuple))->extname),
             "snowflake") == 0;
  systable_endscan(scan);
  table_close(relation, AccessShareLock);
  return snowflake;
}

object_access_hook_type previous_object_access = nullptr;

// Sees every creation and drop of the extension ("Creations", "Unknown stays
// unknown" above).
void object_access(ObjectAccessType access, Oid class_id, Oid object_id, int sub_id, void* arg) {
  if (previous_object_access != nullptr)
    previous_object_access(access, class_id, object_id, sub_id, arg);
  if (class_id != ExtensionRelationId || (access != OAT_POST_CREATE && access != OAT_DROP) ||
      !is_snowflake(object_id))
    return;
  if (access == OAT_POST_CREATE) {
    note_extension_created(object_id);
  } else if (shared_node != nullptr && bound::drop_marks_unknown(bound_state())) {
    mark_bound_unknown(
        "the snowflake extension was dropped in database %s while the bound was not "
        "known, and its tables may keep the IDs it issued",
        quoted_database(), ERROR);
  }
}

}  // namespace

void set_bound_state(BoundState state) {
  pg_atomic_write_u32(&shared_node->bound_state, static_cast<uint32>(state));
}

BoundState bound_state() {
  return static_cast<BoundState>(pg_atomic_read_u32(&shared_node->bound_state));
}

void require_known_bound() {
  if (bound_state() == BoundState::kChecking && !registry_worker_registered()) {
    // Without the registry worker no check runs: the backend consults the
    // replication origin itself.
    consult_register_connected(true);
    if (bound_state() == BoundState::kKnown) return;
    refuse_unchecked();
  }
  wait_while_the_check_moves();
  switch (bound_state()) {
    case BoundState::kKnown:
      return;
    case BoundState::kChecking: {
      LWLockAcquire(shared_node->durable_lock, LW_SHARED);
      const char* at = pstrdup(shared_node->bound_check.asked_name);
      LWLockRelease(shared_node->durable_lock);
      ereport(
          ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("snowflake is still checking whether this data directory has issued IDs"),
           errdetail("pg_snowflake/state %s when the server started, and no replication "
                     "origin gave the bound, so the snowflake registry worker looks for the "
                     "extension in every database before the first ID; it has not moved on "
                     "for %lld s%s%s%s.",
                     shared_node->state_file_problem, static_cast<long long>(kCheckStallMs / 1000),
                     at[0] != '\0' ? " from database \"" : "", at, at[0] != '\0' ? "\"" : ""),
           errhint("A lock held on that database (ALTER DATABASE, a CREATE DATABASE using it "
                   "as template) delays the check until it is released; the server log "
                   "says what the check waits for and when it ends. Or, as a superuser, "
                   "give the bound: SELECT snowflake_set_bound(now()) if this data "
                   "directory never issued IDs.")));
      break;
    }
    case BoundState::kUnknown: {
      LWLockAcquire(shared_node->durable_lock, LW_SHARED);
      const char* why = pstrdup(shared_node->bound_unknown_why);
      LWLockRelease(shared_node->durable_lock);
      // After pg_upgrade an extension keeps its version until ALTER EXTENSION
      // UPDATE, and versions before 1.4 lack the two functions.
      const char* first = has_bound_functions() ? "" : "ALTER EXTENSION snowflake UPDATE, then ";
      // After a start without a readable state file, no data directory it
      // "came from" need exist (a file removed or damaged here): the hint
      // that is safe for every case. pg_upgrade's marks name the old data
      // directory's state file, which the classic hint asks for.
      const bool unread = shared_node->state_file_problem[0] != '\0' &&
                          strstr(why, "made by pg_upgrade") == nullptr;
      ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                      errmsg("the bound above this node's earlier snowflake IDs is unknown"),
                      errdetail("%s; IDs issued before could be issued again.", capitalized(why)),
                      unread ? errhint("As a superuser, %s%s.", first, kGiveBoundHint)
                             : errhint("As a superuser, run %sSELECT "
                                       "snowflake_restore_bound('/path/to/old/data') with the data "
                                       "directory this one came from, or, if it never issued IDs, "
                                       "SELECT snowflake_set_bound(now()).",
                                       first)));
      break;
    }
  }
}

void mark_bound_unknown(const char* clause, const char* databases, int elevel) {
  // On disk first: nothing may rely on the mark before it is durable.
  (void)append_unknown_mark(clause, databases, elevel);
  if (shared_node == nullptr) return;
  LWLockAcquire(shared_node->durable_lock, LW_EXCLUSIVE);
  if (bound_state() != BoundState::kKnown) {
    if (!read_unknown_marks(shared_node->bound_unknown_why, sizeof(shared_node->bound_unknown_why)))
      strlcpy(shared_node->bound_unknown_why, "the bound was marked unknown",
              sizeof(shared_node->bound_unknown_why));
    set_bound_state(BoundState::kUnknown);
  }
  LWLockRelease(shared_node->durable_lock);
}

void conclude_bound_check(const char* found) {
  const BoundState state = bound_state();
  if (state != BoundState::kChecking) return;
  if (bound::after_check(state, found != nullptr) == BoundState::kUnknown) {
    // The real reason, in the mark (which outlasts restarts).
    char clause[kUnknownMarkMax];
    snprintf(clause, sizeof(clause),
             "the snowflake extension is in database %%s, yet pg_snowflake/state %s at start "
             "and no replication origin gave the bound",
             shared_node->state_file_problem);
    mark_bound_unknown(clause, found, WARNING);
    return;
  }
  LWLockAcquire(shared_node->durable_lock, LW_EXCLUSIVE);
  if (bound_state() == BoundState::kChecking) set_bound_state(BoundState::kKnown);
  LWLockRelease(shared_node->durable_lock);
}

// What a creation records is bound::at_creation's.
void note_extension_created(Oid extension) {
  if (shared_node == nullptr && !IsBinaryUpgrade) return;
  BoundState state = BoundState::kKnown;
  bool written = true;
  if (shared_node != nullptr) {
    state = bound_state();
    LWLockAcquire(shared_node->durable_lock, LW_SHARED);
    written = shared_node->state_file_written;
    LWLockRelease(shared_node->durable_lock);
  }
  switch (bound::at_creation(IsBinaryUpgrade, state, written)) {
    case bound::Creation::kMarkUnknown:
      mark_bound_unknown(
          "this data directory was made by pg_upgrade, which brought the snowflake "
          "extension in database %s",
          quoted_database(), ERROR);
      clear_register();
      return;
    case bound::Creation::kNothing:
      return;
    case bound::Creation::kWriteStateFile:
      // In WAL too, so that a standby cloned before now vouches as well.
      (void)adopt_bound(shared_node->written_until);
      return;
    case bound::Creation::kVouch:
      // No ID is issued until the bound is known, so none was issued under
      // this extension: a vouch, as without the preload, which the check (at
      // this database now or after a restart) counts as no extension. (A drop
      // before it marked the bound unknown.)
      vouch_for_creation(MyDatabaseId, extension);
      if (registry_worker_registered()) return;
      ereport(WARNING,
              (errmsg("snowflake cannot issue IDs on this server until the bound above its "
                      "earlier IDs is known"),
               errdetail("pg_snowflake/state was missing when the server started, and the "
                         "check of the databases runs in the snowflake registry worker, which "
                         "could not be registered: max_worker_processes = %d leaves it no slot.",
                         max_worker_processes),
               errhint("Raise max_worker_processes by 1 and restart the server; or, as a "
                       "superuser, SELECT snowflake_set_bound(now()) if this data directory "
                       "never issued IDs.")));
      return;
    case bound::Creation::kStaysUnknown: {
      // The bound stays unknown whatever is created: no vouch.
      LWLockAcquire(shared_node->durable_lock, LW_SHARED);
      const char* why = pstrdup(shared_node->bound_unknown_why);
      LWLockRelease(shared_node->durable_lock);
      ereport(WARNING,
              (errmsg("snowflake cannot issue IDs on this server until the bound above its "
                      "earlier IDs is given"),
               errdetail("%s.", capitalized(why)),
               errhint("As a superuser, SELECT snowflake_restore_bound('/path/to/old/data') or "
                       "SELECT snowflake_set_bound(now()); README, \"Upgrading PostgreSQL\".")));
      return;
    }
  }
}

void install_bound_origin_hooks() {
  previous_object_access = object_access_hook;
  object_access_hook = object_access;
  // A library loaded by a server in binary-upgrade mode without the preload
  // is pg_upgrade's, restoring the extension's functions into this data
  // directory or checking that it can ("Unknown stays unknown").
  if (IsBinaryUpgrade && IsUnderPostmaster && !process_shared_preload_libraries_in_progress) {
    mark_bound_unknown(
        "this data directory was made by pg_upgrade, which loaded the snowflake "
        "library in database %s",
        quoted_database(), ERROR);
    clear_register();
  }
}

}  // namespace snowflake::pg

using namespace snowflake::pg;

// Called at the end of a creation's scripts, which then drop it ("Creations" above).
SNOWFLAKE_FUNCTION(snowflake_note_created) {
  const Oid extension = get_extension_oid("snowflake", true);
  if (!creating_extension || !OidIsValid(extension) || CurrentExtensionObject != extension) {
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                    errmsg("snowflake_note_created() is only for the snowflake extension's own "
                           "scripts")));
  }
  // With the preload the object access hook has noted it.
  char why[kUnknownMarkMax];
  if (shared_node == nullptr && members_all_new(extension) && !state_file_exists() &&
      !read_unknown_marks(why, sizeof(why)))
    vouch_for_creation(MyDatabaseId, extension);
  PG_RETURN_VOID();
}
