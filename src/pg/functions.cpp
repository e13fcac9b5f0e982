// The SQL-callable functions of version 1.0: snowflake_nextval() and
// snowflake_decode(id).
#include "boundary.hpp"
#include "issue.hpp"
#include "settings.hpp"
#include "time.hpp"

namespace snowflake::pg {
namespace {

// Rejects IDs no layout produces: the sign bit of an ID is always 0.
void require_valid_id(int64_t id) {
  if (id < 0) {
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
             errmsg("snowflake ID must not be negative"),
             errdetail("The ID given is %lld; snowflake IDs are positive bigint values (the sign "
                       "bit is always 0).",
                       static_cast<long long>(id)),
             errhint("Pass an ID returned by snowflake_nextval().")));
  }
}

}  // namespace
}  // namespace snowflake::pg

using namespace snowflake::pg;

SNOWFLAKE_FUNCTION(snowflake_nextval) {
  PG_RETURN_INT64(issue(1).first_id);
}

SNOWFLAKE_FUNCTION(snowflake_decode) {
  const int64_t id = PG_GETARG_INT64(0);
  require_valid_id(id);
  TupleDesc descriptor;
  if (get_call_result_type(fcinfo, nullptr, &descriptor) != TYPEFUNC_COMPOSITE)
    elog(ERROR, "snowflake_decode: return type must be a row type");
  const snowflake::Fields fields = settings.layout.decompose(id);
  Datum values[4] = {
      TimestampTzGetDatum(timestamptz_from_unix_ms(fields.timestamp + settings.layout.epoch_ms())),
      Int32GetDatum(static_cast<int32>(fields.datacenter_id)),
      Int32GetDatum(static_cast<int32>(fields.worker_id)),
      Int32GetDatum(static_cast<int32>(fields.sequence)),
  };
  bool nulls[4] = {false, false, false, false};
  PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(descriptor), values, nulls)));
}
