// The dump's carrier of the bound: the table snowflake_dump_bound, an
// extension configuration table, so pg_dump and pg_dumpall dump its one row
// with the database's data (sql/snowflake--1.7--1.8.sql makes it). The row is
// an ID above every ID this node issued in this database; whoever restores
// the dump restores the row, and with it the bound. The rules are
// src/core/carrier.hpp's, which the simulator runs too.
//
// Protocol (backends of one database; parallel workers alike). Each backend
// keeps the carrier value it last saw (covered_below). Before it returns a
// run of IDs whose last one is at or past it, it reads the table and raises
// the row in place to the node's written durable bound (durable.cpp), which
// lies above every ID the node issues before writing another; then every ID
// it returns lies below the row. The raise is not transactional, so a run
// fetched in a transaction that rolls back, a read-only one, a parallel
// worker's, or one stored later by another transaction is covered too:
// - the row is overwritten in place (one fixed-width bigint, under the
//   buffer's exclusive lock, only ever upwards), WAL-logged as a generic WAL
//   record. No flush: a commit that stores such an ID comes later in WAL, so
//   whatever keeps that commit (a crash's recovery, a standby's replay, a
//   dump taken on a standby) has the raise before it. A commit's snapshot
//   sees the raise too: the raise happened before the ID was returned, so
//   before any transaction that stores it committed, and a dump's COPY reads
//   the row's bytes as they are, not as of its snapshot;
// - UPDATE, DELETE and TRUNCATE of the table are refused (triggers): a new
//   version of the row would lose the raises made into the old one. DROP
//   EXTENSION drops it with the extension; the relation cache callback then
//   makes every backend read the next carrier afresh. Nothing else writes
//   the row but a superuser who bypasses the triggers;
// - the cost: one compare on the hot path (carrier.hpp); a read of one page
//   per backend about once per durable interval (1 s), or at its first ID,
//   and a WAL record per database and interval.
// A row above the node's written bound came from a restore that bypassed the
// trigger (pg_restore --disable-triggers): the node takes it as its bound
// before returning anything, and drops the run it had reserved below it.
//
// Restores. A restore's COPY or INSERT into the table fires its trigger: the
// restored value raises the node's bound (adopt_bound, or while the bound is
// not known the generator's floor, for want of a durable bound to raise) and
// is merged into the table's row; no second row is added. The extension is
// trusted, so a database owner who is not a superuser may create it and
// restore dumps: a role that may not run snowflake_set_bound gives the node
// a restored value only if it lies no further ahead of the clock than
// snowflake.max_lead (as far as any role issuing IDs may push the generator);
// beyond, a WARNING says what a superuser must run, and the value is neither
// taken nor carried.
#include "carrier.hpp"

#include <algorithm>

#include "../../core/carrier.hpp"
#include "../boundary.hpp"
#include "bound_check.hpp"
#include "durable.hpp"
#include "../node.hpp"
#include "../node_memory.hpp"
#include "../postgres.hpp"
#include "../registry/registry.hpp"
#include "../settings.hpp"
#include "../time.hpp"

extern "C" {
#include "access/generic_xlog.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_extension.h"
#include "commands/dbcommands.h"
#include "commands/trigger.h"
#include "parser/parse_func.h"
#include "storage/bufmgr.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

namespace snowflake::pg {

namespace carrier_detail {
int64_t covered_below = 0;
}

namespace {

constexpr char kCarrierTable[] = "snowflake_dump_bound";

// The carrier relation covered_below was read from (InvalidOid: none).
Oid carrier_seen = InvalidOid;
// A carrier without its row was reported (once per backend).
bool reported_rowless = false;

void forget_carrier(Datum, Oid relation) {
  if (relation == InvalidOid || relation == carrier_seen) carrier_detail::covered_below = 0;
}

// The extension's OID and schema in this database (InvalidOid: none).
Oid snowflake_extension(Oid* schema) {
  Relation extensions = table_open(ExtensionRelationId, AccessShareLock);
  ScanKeyData key;
  ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
              CStringGetDatum("snowflake"));
  SysScanDesc scan = systable_beginscan(extensions, ExtensionNameIndexId, true, nullptr, 1, &key);
  const HeapTuple tuple = systable_getnext(scan);
  Oid extension = InvalidOid;
  if (HeapTupleIsValid(tuple)) {
    const auto* form = reinterpret_cast<Form_pg_extension>(GETSTRUCT(tuple));
    extension = form->oid;
    *schema = form->extnamespace;
  }
  systable_endscan(scan);
  table_close(extensions, AccessShareLock);
  return extension;
}

// This database's carrier (InvalidOid: none, as under 1.7): the extension's
// own table of that name, in its schema.
Oid find_carrier() {
  Oid schema = InvalidOid;
  const Oid extension = snowflake_extension(&schema);
  if (!OidIsValid(extension)) return InvalidOid;
  const Oid relation = get_relname_relid(kCarrierTable, schema);
  if (!OidIsValid(relation) || getExtensionOfObject(RelationRelationId, relation) != extension)
    return InvalidOid;
  return relation;
}

// Whether the table is as the extension made it: a heap whose first two
// columns are bigints, ids_before and system_identifier. A row is read and
// written at their places.
bool carrier_shaped(Relation relation) {
  const TupleDesc descriptor = RelationGetDescr(relation);
  if (relation->rd_rel->relkind != RELKIND_RELATION ||
      relation->rd_rel->relam != HEAP_TABLE_AM_OID || descriptor->natts < 2)
    return false;
  for (int column = 0; column < 2; column++) {
    const Form_pg_attribute attribute = TupleDescAttr(descriptor, column);
    if (attribute->attisdropped || attribute->atttypid != INT8OID) return false;
  }
  return true;
}

// This cluster's system identifier, as pg_control_system() shows it.
int64_t this_system() {
  return static_cast<int64_t>(GetSystemIdentifier());
}

// The two bigints of the row at `offset` of the locked `buffer`, if the row
// is live (committed, or this transaction's, and not deleted): the first
// columns, at the start of the tuple's data (8-byte aligned, as every
// tuple's data).
int64_t* value_at(Relation relation, Buffer buffer, OffsetNumber offset) {
  const Page page = BufferGetPage(buffer);
  if (offset > PageGetMaxOffsetNumber(page)) return nullptr;
  const ItemId item = PageGetItemId(page, offset);
  if (!ItemIdIsNormal(item)) return nullptr;
  HeapTupleData tuple;
  tuple.t_data = reinterpret_cast<HeapTupleHeader>(PageGetItem(page, item));
  tuple.t_len = ItemIdGetLength(item);
  tuple.t_tableOid = RelationGetRelid(relation);
  ItemPointerSet(&tuple.t_self, BufferGetBlockNumber(buffer), offset);
  if (!HeapTupleSatisfiesVisibility(&tuple, SnapshotSelf, buffer)) return nullptr;
  if (HeapTupleHasNulls(&tuple) &&
      (att_isnull(0, tuple.t_data->t_bits) || att_isnull(1, tuple.t_data->t_bits)))
    return nullptr;
  if (HeapTupleHeaderGetNatts(tuple.t_data) < 2 ||
      tuple.t_len < tuple.t_data->t_hoff + 2 * sizeof(int64_t))
    return nullptr;
  return reinterpret_cast<int64_t*>(reinterpret_cast<char*>(tuple.t_data) + tuple.t_data->t_hoff);
}

// The live rows of the carrier: the largest value, the largest another
// cluster wrote, and where the first row is (the one raises go to). Read
// under each page's lock, so never half written.
struct Carried {
  bool found = false;
  int64_t largest = 0;
  int64_t largest_elsewhere = 0;
  int64_t first_value = 0;
  ItemPointerData first;
};

Carried read_carrier(Relation relation) {
  Carried carried;
  const BlockNumber blocks = RelationGetNumberOfBlocks(relation);
  for (BlockNumber block = 0; block < blocks; ++block) {
    const Buffer buffer = ReadBuffer(relation, block);
    LockBuffer(buffer, BUFFER_LOCK_SHARE);
    const OffsetNumber last = PageGetMaxOffsetNumber(BufferGetPage(buffer));
    for (OffsetNumber offset = FirstOffsetNumber; offset <= last; offset++) {
      const int64_t* value = value_at(relation, buffer, offset);
      if (value == nullptr) continue;
      if (!carried.found) {
        carried.found = true;
        carried.first_value = *value;
        ItemPointerSet(&carried.first, block, offset);
      }
      carried.largest = std::max(carried.largest, value[0]);
      if (value[1] != this_system())
        carried.largest_elsewhere = std::max(carried.largest_elsewhere, value[0]);
    }
    UnlockReleaseBuffer(buffer);
  }
  return carried;
}

// Raises the row at `row` to `value`, covered by the bound of the cluster
// `system`, in place, never lowering it: under the buffer's exclusive lock,
// in a generic WAL record.
void raise_row(Relation relation, const ItemPointerData& row, int64_t value, int64_t system) {
  const Buffer buffer = ReadBuffer(relation, ItemPointerGetBlockNumber(&row));
  LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
  const int64_t* at = value_at(relation, buffer, ItemPointerGetOffsetNumber(&row));
  if (at != nullptr && *at < value) {
    const Page page = BufferGetPage(buffer);
    GenericXLogState* record = GenericXLogStart(relation);
    const Page copy = GenericXLogRegisterBuffer(record, buffer, 0);
    const ptrdiff_t place = reinterpret_cast<const char*>(at) - reinterpret_cast<const char*>(page);
    auto* values = reinterpret_cast<int64_t*>(copy + place);
    values[0] = value;
    values[1] = system;
    (void)GenericXLogFinish(record);
  }
  UnlockReleaseBuffer(buffer);
}

int64_t written_until() {
  LWLockAcquire(shared_node->durable_lock, LW_SHARED);
  const int64_t until = shared_node->written_until;
  LWLockRelease(shared_node->durable_lock);
  return until;
}

const char* carried_text(int64_t carried) {
  const int64_t unit = carrier::bound_of(settings.layout, carried) - 1;
  return unix_ms_text(settings.layout.unix_ms(std::max<int64_t>(unit, 0)));
}

// The node's generator stays above `carried` from now on: its durable bound
// rises to it where the bound is known; where it is not, no bound can be
// written, so the floor rises (until a restart; the row stays, and the
// first ID issued in this database takes it again).
void take_bound(int64_t carried) {
  const int64_t until = carrier::bound_of(settings.layout, carried);
  if (bound_state() == BoundState::kKnown)
    (void)adopt_bound(until);
  else
    node_generator()->raise_floor(until);
}

// While the databases are checked (a new cluster's first seconds: its
// pg_snowflake/state was missing at start), a restore's trigger waits for the
// check, as the first ID would, so that it writes the bound it takes; for as
// long as the check moves on (a stalled one: kCheckStallMs, as
// require_known_bound waits). Then, if the bound is still not known, only
// the generator's floor rises (take_bound), and the row keeps the restored
// cluster's system identifier for the first ID to take.
void wait_for_the_check() {
  if (!registry_worker_registered()) return;  // no check runs
  wait_while_the_check_moves();
}

const char* qualified_carrier(Relation relation) {
  return quote_qualified_identifier(get_namespace_name(RelationGetNamespace(relation)),
                                    RelationGetRelationName(relation));
}

}  // namespace

void install_carrier_callbacks() {
  CacheRegisterRelcacheCallback(forget_carrier, 0);
}

bool carry(int64_t first_id) {
  const Oid relation_id = find_carrier();
  Relation relation = nullptr;
  if (OidIsValid(relation_id)) {
    relation = table_open(relation_id, AccessShareLock);
    if (!carrier_shaped(relation)) {
      table_close(relation, AccessShareLock);
      relation = nullptr;
    }
  }
  const Carried carried = relation != nullptr ? read_carrier(relation) : Carried{};
  const carrier::AfterRead after = carrier::after_read(
      settings.layout, written_until(), carried.largest, carried.largest_elsewhere, first_id);
  if (after.adopt) {
    take_bound(carried.largest_elsewhere);
    ereport(LOG, (errmsg("snowflake: took the bound in snowflake_dump_bound of database \"%s\", "
                         "above this node's",
                         get_database_name(MyDatabaseId)),
                  errdetail("The table says this database holds IDs of this node's identity "
                            "issued up to %s by another cluster (restored without the table's "
                            "trigger, or upgraded). IDs are issued above them from now on.",
                            carried_text(carried.largest_elsewhere))));
  }
  if (carried.found && carried.first_value < after.raise_to)
    raise_row(relation, carried.first, after.raise_to, this_system());
  if (relation != nullptr && !carried.found && !reported_rowless) {
    reported_rowless = true;
    ereport(WARNING,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("snowflake_dump_bound has no row, so a dump of this database carries no bound"),
             errdetail("The row was deleted with the table's triggers bypassed."),
             errhint("INSERT INTO %s VALUES (0, 0); its trigger raises the new row to this node's "
                     "bound.",
                     qualified_carrier(relation))));
  }
  if (relation != nullptr) table_close(relation, AccessShareLock);
  carrier_seen = relation_id;
  carrier_detail::covered_below = after.covered_below;
  return !after.reserve_again;
}

}  // namespace snowflake::pg

using namespace snowflake::pg;
namespace carrier = snowflake::carrier;

namespace {

TriggerData* trigger_data(FunctionCallInfo fcinfo, const char* name) {
  if (!CALLED_AS_TRIGGER(fcinfo)) {
    ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                    errmsg("%s() is a trigger function of snowflake_dump_bound", name)));
  }
  return reinterpret_cast<TriggerData*>(fcinfo->context);
}

// Whether the current role may give this node a bound: it may run
// snowflake_set_bound (superusers, and roles granted EXECUTE on it).
bool may_give_bounds(Relation relation) {
  if (superuser()) return true;
  Oid arguments[2] = {TIMESTAMPTZOID, BOOLOID};
  List* name = list_make2(makeString(get_namespace_name(RelationGetNamespace(relation))),
                          makeString(pstrdup("snowflake_set_bound")));
  const Oid function = LookupFuncName(name, 2, arguments, true);
  return OidIsValid(function) &&
         DatumGetBool(DirectFunctionCall2(has_function_privilege_id, ObjectIdGetDatum(function),
                                          CStringGetTextDatum("EXECUTE")));
}

}  // namespace

// BEFORE INSERT, for each row: a restored row (COPY or INSERT) raises the
// node's bound and is merged into the table's row; the first row of an empty
// table (the update script's) goes in, raised to the node's bound.
SNOWFLAKE_FUNCTION(snowflake_dump_bound_insert) {
  TriggerData* data = trigger_data(fcinfo, "snowflake_dump_bound_insert");
  if (!TRIGGER_FIRED_BY_INSERT(data->tg_event) || !TRIGGER_FIRED_BEFORE(data->tg_event) ||
      !TRIGGER_FIRED_FOR_ROW(data->tg_event))
    elog(ERROR, "snowflake_dump_bound_insert() fired other than BEFORE INSERT FOR EACH ROW");
  Relation relation = data->tg_relation;
  if (!carrier_shaped(relation))
    elog(ERROR, "snowflake_dump_bound is not as the snowflake extension made it");
  bool is_null = false;
  Datum datum = heap_getattr(data->tg_trigtuple, 1, RelationGetDescr(relation), &is_null);
  const int64_t restored = is_null ? 0 : std::max<int64_t>(DatumGetInt64(datum), 0);
  datum = heap_getattr(data->tg_trigtuple, 2, RelationGetDescr(relation), &is_null);
  const int64_t restored_system = is_null ? 0 : DatumGetInt64(datum);
  const snowflake::Layout& layout = settings.layout;

  // With the preload, the node's bound; without, no ID is issued on this
  // server: the row carries the value to the first that is.
  const bool preloaded = shared_node != nullptr;
  if (preloaded && restored > 0) wait_for_the_check();
  const int64_t written = preloaded ? written_until() : 0;
  const int64_t clock_ms = unix_ms_from_timestamptz(GetCurrentTimestamp()) - layout.epoch_ms();
  // What the row becomes: the value, and the cluster whose bound covers it
  // (this one's once it is taken; while this one's is not known, the
  // restored row's, so that the first ID issued here takes it even after a
  // restart).
  int64_t merged = restored;
  int64_t merged_system = this_system();
  switch (carrier::admit(layout, restored, written, may_give_bounds(relation), clock_ms,
                         settings.max_lead_ms)) {
    case carrier::Admission::kCovered:
      break;
    case carrier::Admission::kTaken: {
      if (!preloaded || bound_state() != BoundState::kKnown) merged_system = restored_system;
      if (!preloaded) break;
      take_bound(restored);
      const int64_t last_unit = carrier::bound_of(layout, restored) - 1;
      const int64_t lead_ms = layout.start_ms(last_unit) - clock_ms;
      ereport(LOG, (errmsg("snowflake: took the bound of a restored snowflake_dump_bound row in "
                           "database \"%s\"",
                           get_database_name(MyDatabaseId)),
                    errdetail("The restored database holds IDs of this node's identity issued "
                              "up to %s; IDs are issued above them from now on.",
                              carried_text(restored))));
      if (lead_ms >
          static_cast<int64_t>(settings.max_lead_ms) + settings.max_clock_backward_wait_ms) {
        ereport(WARNING,
                (errcode(ERRCODE_WARNING),
                 errmsg("the restored snowflake bound is %lld ms ahead of the clock",
                        static_cast<long long>(lead_ms)),
                 errdetail("The restored database holds IDs issued up to %s, and this node "
                           "issues above them: snowflake_nextval() fails until the clock is "
                           "within snowflake.max_lead (%d ms) and "
                           "snowflake.max_clock_backward_wait (%d ms) of that time.",
                           carried_text(restored), settings.max_lead_ms,
                           settings.max_clock_backward_wait_ms),
                 errhint("Wait for the clock, or give this node a snowflake.worker_id that no "
                         "other node uses.")));
      }
      break;
    }
    case carrier::Admission::kRefused: {
      merged = 0;
      const int64_t last_unit = carrier::bound_of(layout, restored) - 1;
      ereport(WARNING,
              (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
               errmsg("snowflake did not take the bound of the restored snowflake_dump_bound "
                      "row: role \"%s\" may not give this node a bound that far ahead",
                      GetUserNameFromId(GetUserId(), false)),
               errdetail("The row says the restored database holds IDs issued up to %s, %lld ms "
                         "ahead of the clock; a role that may not run snowflake_set_bound may "
                         "restore a bound at most snowflake.max_lead (%d ms) ahead. Until a "
                         "superuser gives it, this node may issue those IDs again.",
                         carried_text(restored),
                         static_cast<long long>(layout.start_ms(last_unit) - clock_ms),
                         settings.max_lead_ms),
               errhint("As a superuser, in database \"%s\": INSERT INTO %s VALUES (%lld, %lld);",
                       get_database_name(MyDatabaseId), qualified_carrier(relation),
                       static_cast<long long>(restored), static_cast<long long>(restored_system))));
      break;
    }
  }

  const Carried carried = read_carrier(relation);
  if (carried.found) {
    if (carried.first_value < merged) raise_row(relation, carried.first, merged, merged_system);
    return static_cast<Datum>(0);  // merged: no second row (a NULL tuple)
  }
  // The table's first row (the update script's, or one the WARNING of
  // carry() asks for).
  const bool known = preloaded && bound_state() == BoundState::kKnown;
  const int64_t covered = known ? carrier::of_bound(layout, written_until()) : 0;
  Datum values[2] = {Int64GetDatum(std::max(merged, covered)),
                     Int64GetDatum(merged > covered ? merged_system : this_system())};
  bool nulls[2] = {false, false};
  int columns[2] = {1, 2};
  return PointerGetDatum(heap_modify_tuple_by_cols(data->tg_trigtuple, RelationGetDescr(relation),
                                                   2, columns, values, nulls));
}

// BEFORE UPDATE OR DELETE for each row, BEFORE TRUNCATE for each statement.
SNOWFLAKE_FUNCTION(snowflake_dump_bound_refuse) {
  TriggerData* data = trigger_data(fcinfo, "snowflake_dump_bound_refuse");
  const char* command = TRIGGER_FIRED_BY_UPDATE(data->tg_event)   ? "UPDATE"
                        : TRIGGER_FIRED_BY_DELETE(data->tg_event) ? "DELETE FROM"
                                                                  : "TRUNCATE";
  ereport(
      ERROR,
      (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("cannot %s snowflake_dump_bound", command),
       errdetail("Its row is the bound above this node's IDs in this database, which pg_dump "
                 "carries; the backends raise it in place, and a new version of the row "
                 "would lose their raises."),
       errhint("To carry a higher bound, INSERT INTO %s VALUES (the ID, 0): the row rises to it, "
               "and never falls. DROP EXTENSION snowflake removes the table.",
               qualified_carrier(data->tg_relation))));
  PG_RETURN_NULL();
}
