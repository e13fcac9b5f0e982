// The status functions behind the views snowflake_status (the node) and
// snowflake_backend_status (each backend that has issued IDs).
// Both check SELECT on their view (status.hpp says why).
#include "status.hpp"

#include <algorithm>

#include "../core/clock.hpp"
#include "../core/layout_end.hpp"
#include "../core/layout_text.hpp"
#include "boundary.hpp"
#include "counters.hpp"
#include "node.hpp"
#include "settings.hpp"
#include "time.hpp"

namespace snowflake::pg {

void require_view_privilege(FunctionCallInfo fcinfo, const char* view, bool missing_allows) {
  const Oid schema = get_func_namespace(fcinfo->flinfo->fn_oid);
  const Oid relation = get_relname_relid(view, schema);
  if (!OidIsValid(relation) && missing_allows) return;
  if (!OidIsValid(relation) ||
      pg_class_aclcheck(relation, GetUserId(), ACL_SELECT) != ACLCHECK_OK) {
    ereport(ERROR,
            (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE), errmsg("permission denied for view %s", view),
             errdetail("Reading the snowflake status needs SELECT on the view %s.", view),
             errhint("Grant SELECT on %s, or the role pg_monitor, to the role.", view)));
  }
}

namespace {

Generator& require_generator() {
  Generator* generator = node_generator();
  if (generator == nullptr) {
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("snowflake must be loaded via shared_preload_libraries"),
             errdetail("The node's generator and its counters live in shared memory, which is "
                       "set up only when the server starts with the library preloaded."),
             errhint("Add snowflake to shared_preload_libraries in postgresql.conf "
                     "(shared_preload_libraries = 'snowflake') and restart the server.")));
  }
  return *generator;
}

TimestampTz id_time(int64_t timestamp) {
  return timestamptz_from_unix_ms(settings.layout.unix_ms(timestamp));
}

Datum nullable_int(int value, bool* null) {
  *null = value < 0;
  return Int32GetDatum(value);
}

// `ms` (>= 0) as an interval of days and a time of day (no months, whose
// length varies).
Datum interval_of_ms(int64_t ms) {
  auto* interval = static_cast<Interval*>(palloc(sizeof(Interval)));
  interval->month = 0;
  interval->day = static_cast<int32>(ms / snowflake::kMsPerDay);
  interval->time = ms % snowflake::kMsPerDay * 1000;
  return IntervalPGetDatum(interval);
}

}  // namespace
}  // namespace snowflake::pg

using namespace snowflake::pg;

SNOWFLAKE_FUNCTION(snowflake_status) {
  require_view_privilege(fcinfo, "snowflake_status");
  snowflake::Generator& generator = require_generator();
  const snowflake::Layout& layout = settings.layout;
  const snowflake::GeneratorState& state = generator.state();
  const Counters counters = node_counters();
  const int64_t last_timestamp = layout.timestamp_of(state.last_id.load());
  const int64_t now = snowflake::unix_time_ms();
  const int64_t clock = now - layout.epoch_ms();
  const snowflake::LayoutEnd end = snowflake::layout_end(layout, now);

  TupleDesc descriptor;
  if (get_call_result_type(fcinfo, nullptr, &descriptor) != TYPEFUNC_COMPOSITE)
    elog(ERROR, "snowflake_status: return type must be a row type");
  // 21 columns from 1.7 (the layout's end), 19 in 1.6 (the durable-bound
  // waits), 17 in 1.5 (layout), 16 before: the columns of an older version's
  // definition are the first ones.
  bool nulls[21] = {};
  // A field the layout does not have is 0 once the node has its identity.
  const bool identified = settings.node >= 0;
  const int datacenter_id =
      layout.datacenter_bits() == 0 && identified ? 0 : settings.datacenter_id;
  const int worker_id = layout.worker_bits() == 0 && identified ? 0 : settings.worker_id;
  char layout_text[snowflake::kLayoutTextSize];
  snowflake::describe_layout(layout.parts(), layout_text, sizeof(layout_text));
  // The end past timestamptz (the year 294276) is its infinity, and the time
  // left then NULL: no interval holds it.
  const bool end_shown = timestamptz_holds_unix_ms(end.ends_at_unix_ms);
  Datum values[21] = {
      nullable_int(datacenter_id, &nulls[0]),
      nullable_int(worker_id, &nulls[1]),
      TimestampTzGetDatum(id_time(0)),
      Int32GetDatum(layout.timestamp_bits()),
      Int32GetDatum(layout.datacenter_bits()),
      Int32GetDatum(layout.worker_bits()),
      Int32GetDatum(layout.sequence_bits()),
      TimestampTzGetDatum(id_time(last_timestamp)),
      Int64GetDatum(std::max<int64_t>(0, layout.start_ms(last_timestamp) - clock)),
      Int64GetDatum(counters.value[kIdsIssued]),
      Int64GetDatum(counters.value[kSequenceWaits]),
      Int64GetDatum(counters.value[kClockWaits]),
      Int64GetDatum(counters.value[kClockErrors]),
      Int64GetDatum(state.clock_steps.load()),
      Int64GetDatum(state.largest_clock_step_ms.load()),
      TimestampTzGetDatum(id_time(state.durable_until.load())),
      CStringGetTextDatum(layout_text),
      Int64GetDatum(counters.value[kDurableWaits]),
      Int64GetDatum(counter_column(kDurableWaitUs, counters.value[kDurableWaitUs])),
      TimestampTzGetDatum(timestamptz_from_unix_ms(end.ends_at_unix_ms)),
      end_shown ? interval_of_ms(end.remaining_ms) : static_cast<Datum>(0),
  };
  if (descriptor->natts > 21) elog(ERROR, "snowflake_status: unexpected row type");
  nulls[7] = state.last_id.load() == 0;
  nulls[20] = !end_shown;
  PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(descriptor), values, nulls)));
}

SNOWFLAKE_FUNCTION(snowflake_backend_status) {
  require_view_privilege(fcinfo, "snowflake_backend_status");
  (void)require_generator();
  InitMaterializedSRF(fcinfo, 0);
  visit_backends(
      [](int pid, const Counters& counters, void* context) {
        auto* info = static_cast<ReturnSetInfo*>(context);
        Datum values[kCounterCount + 1] = {Int32GetDatum(pid)};
        bool nulls[kCounterCount + 1] = {};
        for (int i = 0; i < kCounterCount; i++)
          values[i + 1] = Int64GetDatum(counter_column(i, counters.value[i]));
        tuplestore_putvalues(info->setResult, info->setDesc, values, nulls);
      },
      fcinfo->resultinfo);
  return static_cast<Datum>(0);
}
