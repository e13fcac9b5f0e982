// snowflake_registry_status(): this node's lease as the registry worker last
// published it (the View, view.cpp), one row for operators and tests, behind
// the view of the same name. Like snowflake_status, it checks SELECT on its
// view (../status.hpp).
#include "../boundary.hpp"
#include "../status.hpp"
#include "durability.hpp"
#include "view.hpp"

using namespace snowflake::pg;
using namespace snowflake::pg::registry;

namespace {

const char* state_name(const View& view, int64_t now_us) {
  switch (view.state) {
    case State::kDisabled:
      return "disabled";
    case State::kStarting:
      return "starting";
    case State::kStandby:
      return "standby";
    case State::kUnconfigured:
      return "unconfigured";
    case State::kHeld:
      return now_us < view.valid_until_us ? "held" : "expired";
    case State::kConflict:
      return "conflict";
    case State::kUnreachable:
      return "unreachable";
    case State::kExhausted:
      return "exhausted";
    case State::kReleased:
      return "released";
  }
  return "unknown";
}

Datum numeric_from_text(const char* text) {
  return DirectFunctionCall3(numeric_in, CStringGetDatum(text), ObjectIdGetDatum(InvalidOid),
                             Int32GetDatum(-1));
}

}  // namespace

SNOWFLAKE_FUNCTION(snowflake_registry_status) {
  // Before ALTER EXTENSION UPDATE to 1.3 there is no view, and the function's
  // EXECUTE grant (pg_monitor in 1.1 and 1.2) guards it, as it did then.
  require_view_privilege(fcinfo, "snowflake_registry_status", true);
  TupleDesc descriptor;
  if (get_call_result_type(fcinfo, nullptr, &descriptor) != TYPEFUNC_COMPOSITE)
    elog(ERROR, "snowflake_registry_status: return type must be a row type");
  // 23 columns since 1.8 (what a stalled renewal waits for); 21 in 1.7 (the
  // registry's durability); 18 before.
  constexpr int kColumns = 23;
  if (descriptor->natts > kColumns) elog(ERROR, "snowflake_registry_status: unexpected row type");
  Datum values[kColumns];
  bool nulls[kColumns];
  for (int i = 0; i < kColumns; i++) {
    values[i] = 0;
    nulls[i] = true;
  }
  if (shared == nullptr) {
    values[0] = BoolGetDatum(false);
    nulls[0] = false;
    values[1] = CStringGetTextDatum("not preloaded");
    nulls[1] = false;
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(descriptor), values, nulls)));
  }
  View view;
  read_view(&view, sizeof(View));
  const int64_t now_us = lease_clock_us();
  auto set = [&](int column, Datum value) {
    values[column] = value;
    nulls[column] = false;
  };
  char system_identifier[kSystemIdentifierSize];
  snprintf(system_identifier, sizeof(system_identifier), UINT64_FORMAT, GetSystemIdentifier());

  set(0, BoolGetDatum(view.state != State::kDisabled));
  set(1, CStringGetTextDatum(state_name(view, now_us)));
  set(2, BoolGetDatum(view.target_worker_id < 0));
  if (view.datacenter_id >= 0) set(3, Int32GetDatum(view.datacenter_id));
  if (view.worker_id >= 0) set(4, Int32GetDatum(view.worker_id));
  set(5, numeric_from_text(system_identifier));
  if (view.state == State::kHeld) {
    set(6, TimestampTzGetDatum(view.mine.claimed_at));
    set(7, TimestampTzGetDatum(view.mine.renewed_at));
    set(8, TimestampTzGetDatum(view.mine.expires_at));
    set(9, TimestampTzGetDatum(GetCurrentTimestamp() + (view.valid_until_us - now_us)));
  }
  if (view.state == State::kConflict) {
    set(10, CStringGetTextDatum(view.other.host));
    set(11, CStringGetTextDatum(view.other.data_directory));
    set(12, numeric_from_text(view.other.system_identifier));
    set(13, Int64GetDatum(view.other.timeline));
    set(14, TimestampTzGetDatum(view.other.claimed_at));
    set(15, TimestampTzGetDatum(view.other.expires_at));
  }
  if (view.error[0] != '\0') {
    set(16, CStringGetTextDatum(view.error));
    set(17, TimestampTzGetDatum(view.error_at));
  }
  const RegistryFacts& registry = view.registry;
  if (const char* durability = durability_name(registry.durability); durability != nullptr)
    set(18, CStringGetTextDatum(durability));
  if (registry.durability != Durability::kUnknown && registry.standbys >= 0)
    set(19, Int32GetDatum(registry.standbys));
  if (registry.history_changed_at != 0) set(20, TimestampTzGetDatum(registry.history_changed_at));
  if (registry.waits_for[0] != '\0') {
    set(21, CStringGetTextDatum(registry.waits_for));
    set(22, TimestampTzGetDatum(registry.waiting_since));
  }
  PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(descriptor), values, nulls)));
}
