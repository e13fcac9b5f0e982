// SQL functions on ID values: decode, timestamp, compose, the ID range of a
// millisecond, and the base32 text form. Each follows the server's layout and
// epoch (fixed at server start), so they are IMMUTABLE for the life of a
// cluster, like a collation.
#include "../core/base32.hpp"
#include "boundary.hpp"
#include "settings.hpp"
#include "time.hpp"

namespace snowflake::pg {
namespace {

const Layout& layout() {
  return settings.layout;
}

TimestampTz id_time(int64_t timestamp) {
  return timestamptz_from_unix_ms(timestamp + layout().epoch_ms());
}

void require_valid_id(int64_t id) {
  if (id < 0) {
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("snowflake ID must not be negative"),
             errdetail("The ID given is %lld; snowflake IDs are positive bigint values (the sign "
                       "bit is always 0).",
                       static_cast<long long>(id)),
             errhint("Pass an ID returned by snowflake_nextval().")));
  }
}

// The ID timestamp (ms since the epoch) of `ts`, or an error naming `argument`.
int64_t id_timestamp(TimestampTz ts, const char* argument) {
  const bool finite = !TIMESTAMP_NOT_FINITE(ts);
  const int64_t timestamp = finite ? unix_ms_from_timestamptz(ts) - layout().epoch_ms() : -1;
  if (!finite || timestamp < 0 || timestamp > layout().max_timestamp()) {
    ereport(
        ERROR,
        (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
         errmsg("%s %s is outside the range of snowflake timestamps", argument, timestamp_text(ts)),
         errdetail("With snowflake.epoch = %lld and snowflake.timestamp_bits = %d, IDs hold "
                   "times from %s to %s.",
                   static_cast<long long>(layout().epoch_ms()), layout().timestamp_bits(),
                   timestamp_text(id_time(0)), timestamp_text(id_time(layout().max_timestamp()))),
         errhint("Pass a time within that range.")));
  }
  return timestamp;
}

// Fields the layout cannot hold (Layout::check_fields) are an error naming
// the field and its range. The timestamp is checked before, by id_timestamp.
void require_fields(const Fields& fields) {
  struct Field {
    const char* name;
    int64_t value;
    int64_t max;
    const char* width_setting;
    int width;
  };
  Field field;
  switch (layout().check_fields(fields)) {
    case FieldCheck::kOk:
    case FieldCheck::kTimestamp:
      return;
    case FieldCheck::kDatacenter:
      field = {"datacenter_id", fields.datacenter_id, layout().max_datacenter_id(),
               "snowflake.datacenter_bits", layout().datacenter_bits()};
      break;
    case FieldCheck::kWorker:
      field = {"worker_id", fields.worker_id, layout().max_worker_id(), "snowflake.worker_bits",
               layout().worker_bits()};
      break;
    case FieldCheck::kSequence:
      field = {"sequence", fields.sequence, layout().max_sequence(), "snowflake.sequence_bits",
               layout().sequence_bits()};
      break;
  }
  ereport(ERROR,
          (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
           errmsg("%s %lld is out of range", field.name, static_cast<long long>(field.value)),
           errdetail("%s must be between 0 and %lld with %s = %d.", field.name,
                     static_cast<long long>(field.max), field.width_setting, field.width),
           errhint("Pass a %s within that range.", field.name)));
}

// Input quoted in an error: at most this many characters, then "...", so that
// a large argument does not become a large message and log line.
constexpr int kQuotedCharacters = 40;

const char* quoted_input(const char* text, int length) {
  const int shown = pg_mbcliplen(text, length, kQuotedCharacters);
  return shown < length ? psprintf("%s...", pnstrdup(text, shown)) : pnstrdup(text, length);
}

void require_parsed(const base32::ParseResult& result, const char* text, int length) {
  if (result.status == base32::ParseStatus::kOk) return;
  const char* shown = quoted_input(text, length);
  switch (result.status) {
    case base32::ParseStatus::kOk:
      return;
    case base32::ParseStatus::kEmpty:
    case base32::ParseStatus::kTooLong:
      ereport(ERROR,
              (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
               errmsg("invalid snowflake ID in base32: \"%s\"", shown),
               errdetail("It has %d characters; a snowflake ID has 1 to %d.",
                         pg_mbstrlen_with_len(text, length), static_cast<int>(base32::kWidth)),
               errhint("Pass the text snowflake_to_base32() returned, such as "
                       "\"1Y2NHTHGP4000\".")));
      break;
    case base32::ParseStatus::kInvalidCharacter: {
      const char* at = text + result.position;
      ereport(ERROR,
              (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
               errmsg("invalid snowflake ID in base32: \"%s\"", shown),
               errdetail("Character %d, \"%s\", is not a Crockford base32 digit.",
                         pg_mbstrlen_with_len(text, static_cast<int>(result.position)) + 1,
                         pnstrdup(at, pg_mblen(at))),
               errhint("The digits are 0-9 and A-Z without I, L, O and U, in either case; I and "
                       "L read as 1, O as 0.")));
      break;
    }
    case base32::ParseStatus::kOutOfRange:
      ereport(ERROR,
              (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
               errmsg("snowflake ID in base32 \"%s\" is out of range for type bigint", shown),
               errdetail("The largest is \"7ZZZZZZZZZZZZ\"."),
               errhint("Pass the text snowflake_to_base32() returned.")));
      break;
  }
}

}  // namespace
}  // namespace snowflake::pg

using namespace snowflake::pg;

SNOWFLAKE_FUNCTION(snowflake_decode) {
  const int64_t id = PG_GETARG_INT64(0);
  require_valid_id(id);
  TupleDesc descriptor;
  if (get_call_result_type(fcinfo, nullptr, &descriptor) != TYPEFUNC_COMPOSITE)
    elog(ERROR, "snowflake_decode: return type must be a row type");
  const snowflake::Fields fields = layout().decompose(id);
  Datum values[4] = {
      TimestampTzGetDatum(id_time(fields.timestamp)),
      Int32GetDatum(static_cast<int32>(fields.datacenter_id)),
      Int32GetDatum(static_cast<int32>(fields.worker_id)),
      Int32GetDatum(static_cast<int32>(fields.sequence)),
  };
  bool nulls[4] = {false, false, false, false};
  PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(descriptor), values, nulls)));
}

SNOWFLAKE_FUNCTION(snowflake_timestamp) {
  const int64_t id = PG_GETARG_INT64(0);
  require_valid_id(id);
  PG_RETURN_TIMESTAMPTZ(id_time(layout().timestamp_of(id)));
}

SNOWFLAKE_FUNCTION(snowflake_compose) {
  const snowflake::Fields fields{id_timestamp(PG_GETARG_TIMESTAMPTZ(0), "ts"), PG_GETARG_INT32(1),
                                 PG_GETARG_INT32(2), PG_GETARG_INT32(3)};
  require_fields(fields);
  PG_RETURN_INT64(layout().compose(fields));
}

SNOWFLAKE_FUNCTION(snowflake_min_id) {
  PG_RETURN_INT64(layout().min_id(id_timestamp(PG_GETARG_TIMESTAMPTZ(0), "ts")));
}

SNOWFLAKE_FUNCTION(snowflake_max_id) {
  PG_RETURN_INT64(layout().max_id(id_timestamp(PG_GETARG_TIMESTAMPTZ(0), "ts")));
}

SNOWFLAKE_FUNCTION(snowflake_to_base32) {
  const int64_t id = PG_GETARG_INT64(0);
  require_valid_id(id);
  char digits[snowflake::base32::kWidth];
  snowflake::base32::encode(id, digits);
  PG_RETURN_TEXT_P(cstring_to_text_with_len(digits, sizeof(digits)));
}

SNOWFLAKE_FUNCTION(snowflake_from_base32) {
  const text* input = PG_GETARG_TEXT_PP(0);
  const char* digits = VARDATA_ANY(input);
  const int length = VARSIZE_ANY_EXHDR(input);
  const snowflake::base32::ParseResult result =
      snowflake::base32::decode(digits, static_cast<std::size_t>(length));
  require_parsed(result, digits, length);
  PG_RETURN_INT64(result.value);
}
