// SQL functions on ID values: decode, timestamp, compose, the ID range of a
// unit of time, and the base32 text form. Without a layout argument each
// follows the server's layout and epoch (fixed at server start), so they are
// IMMUTABLE for the life of a cluster, like a collation; with one (a preset or
// a specification, layouts.hpp), they follow that layout alone.
#include <algorithm>
#include <cmath>

#include "../core/base32.hpp"
#include "boundary.hpp"
#include "layouts.hpp"
#include "settings.hpp"
#include "text.hpp"
#include "time.hpp"

namespace snowflake::pg {
namespace {

// The layout a call works in: the server's, or its text argument's.
struct CallLayout {
  const Layout& layout;
  FunctionCallInfo fcinfo;
  int argno;  // of the layout argument; -1: the server's layout

  bool is_servers() const { return argno < 0; }
  // "layout \"discord\"", for messages about an argument's layout.
  const char* name() const {
    const text* argument = PG_GETARG_TEXT_PP(argno);
    return psprintf("layout \"%s\"",
                    quoted_text(VARDATA_ANY(argument), VARSIZE_ANY_EXHDR(argument)));
  }
};

// The layout of a function whose layout argument, if given, is `argno`.
CallLayout call_layout(FunctionCallInfo fcinfo, int argno) {
  if (PG_NARGS() <= argno) return CallLayout{settings.layout, fcinfo, -1};
  return CallLayout{layout_argument(fcinfo, argno), fcinfo, argno};
}

TimestampTz unit_time(const Layout& layout, int64_t timestamp) {
  return timestamptz_from_unix_ms(layout.unix_ms(timestamp));
}

// The last timestamp of the layout that timestamptz can show: a timestamp field
// of 54 bits or more (in ms) reaches past the year 294276.
int64_t last_shown_timestamp(const Layout& layout) {
  if (layout.last_unix_ms() <= kLastTimestamptzUnixMs) return layout.max_timestamp();
  return layout.timestamp_at_unix_ms(kLastTimestamptzUnixMs);
}

const char* units_text(const Layout& layout) {
  return layout.unit_ms() == 1
             ? "milliseconds"
             : psprintf("units of %lld ms", static_cast<long long>(layout.unit_ms()));
}

// The time of the ID `id`, or an error if it is past the end of timestamptz.
TimestampTz time_of_id(const CallLayout& call, int64_t id) {
  const Layout& layout = call.layout;
  const int64_t timestamp = layout.timestamp_of(id);
  if (unlikely(timestamp > last_shown_timestamp(layout))) {
    ereport(ERROR, (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
                    errmsg("the time of snowflake ID %lld is after the end of timestamptz",
                           static_cast<long long>(id)),
                    errdetail("Its timestamp field holds %lld %s after %s = %lld; the last time "
                              "timestamptz holds is %s.",
                              static_cast<long long>(timestamp), units_text(layout),
                              call.is_servers() ? "snowflake.epoch" : "the epoch",
                              static_cast<long long>(layout.epoch_ms()),
                              timestamp_text(timestamptz_from_unix_ms(kLastTimestamptzUnixMs))),
                    errhint("Read the field as a number: id >> %d counts the %s after the epoch.",
                            layout.timestamp_shift(), units_text(layout))));
  }
  return unit_time(layout, timestamp);
}

void refuse_negative(int64_t id) {
  ereport(ERROR,
          (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("snowflake ID must not be negative"),
           errdetail("The ID given is %lld; snowflake IDs are positive bigint values (the sign "
                     "bit is always 0).",
                     static_cast<long long>(id)),
           errhint("Pass an ID returned by snowflake_nextval().")));
}

// An ID the layout cannot have issued: negative (unless the layout has 64
// bits), or above its bits.
void require_valid_id(const CallLayout& call, int64_t id) {
  if (likely(call.layout.holds(id))) return;
  if (id < 0) refuse_negative(id);
  ereport(ERROR,
          (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
           errmsg("snowflake ID %lld does not fit %s", static_cast<long long>(id),
                  call.is_servers() ? "the server's layout" : call.name()),
           errdetail("The layout's fields add up to %d bits, so its IDs are below %llu.",
                     call.layout.total_bits(),
                     static_cast<unsigned long long>(uint64_t{1} << call.layout.total_bits())),
           errhint("Pass an ID of this layout.")));
}

// The ID timestamp (units since the epoch) of `ts`, or an error naming
// `argument`.
int64_t id_timestamp(const CallLayout& call, TimestampTz ts, const char* argument) {
  const Layout& layout = call.layout;
  const bool finite = !TIMESTAMP_NOT_FINITE(ts);
  const int64_t unix_ms = finite ? unix_ms_from_timestamptz(ts) : 0;
  const int64_t timestamp =
      finite && unix_ms >= layout.epoch_ms() ? layout.timestamp_at_unix_ms(unix_ms) : -1;
  if (unlikely(timestamp < 0 || timestamp > layout.max_timestamp())) {
    // An epoch past the end of timestamptz leaves no time it can show.
    const char* from = unix_ms_text(layout.epoch_ms());
    const char* to = layout.epoch_ms() <= kLastTimestamptzUnixMs
                         ? timestamp_text(unit_time(layout, last_shown_timestamp(layout)))
                         : unix_ms_text(layout.last_unix_ms());
    ereport(
        ERROR,
        (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
         errmsg("%s %s is outside the range of snowflake timestamps", argument, timestamp_text(ts)),
         call.is_servers()
             ? errdetail("With snowflake.epoch = %lld and snowflake.timestamp_bits = %d, IDs "
                         "hold times from %s to %s.",
                         static_cast<long long>(layout.epoch_ms()), layout.timestamp_bits(), from,
                         to)
             : errdetail("In %s, IDs hold times from %s to %s.", call.name(), from, to),
         errhint("Pass a time within that range.")));
  }
  return timestamp;
}

// Fields the layout cannot hold (Layout::check_fields) are an error naming
// the field and its range. The timestamp is checked before, by id_timestamp.
void require_fields(const CallLayout& call, const Fields& fields) {
  const Layout& layout = call.layout;
  struct Field {
    const char* name;
    int64_t value;
    int64_t max;
    const char* width_setting;
    int width;
  };
  Field field;
  switch (layout.check_fields(fields)) {
    case FieldCheck::kOk:
    case FieldCheck::kTimestamp:
      return;
    case FieldCheck::kDatacenter:
      field = {"datacenter_id", fields.datacenter_id, layout.max_datacenter_id(),
               "snowflake.datacenter_bits", layout.datacenter_bits()};
      break;
    case FieldCheck::kWorker:
      field = {"worker_id", fields.worker_id, layout.max_worker_id(), "snowflake.worker_bits",
               layout.worker_bits()};
      break;
    case FieldCheck::kSequence:
      field = {"sequence", fields.sequence, layout.max_sequence(), "snowflake.sequence_bits",
               layout.sequence_bits()};
      break;
  }
  ereport(ERROR,
          (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
           errmsg("%s %lld is out of range", field.name, static_cast<long long>(field.value)),
           call.is_servers()
               ? errdetail("%s must be between 0 and %lld with %s = %d.", field.name,
                           static_cast<long long>(field.max), field.width_setting, field.width)
               : errdetail("%s must be between 0 and %lld in %s (%d bits).", field.name,
                           static_cast<long long>(field.max), call.name(), field.width),
           errhint("Pass a %s within that range.", field.name)));
}

void require_parsed(const base32::ParseResult& result, const char* text, int length) {
  if (result.status == base32::ParseStatus::kOk) return;
  const char* shown = quoted_text(text, static_cast<std::size_t>(length));
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
    case base32::ParseStatus::kInvalidCharacter:
      refuse_base32_character("invalid snowflake ID in base32", shown, text, result.position);
    case base32::ParseStatus::kOutOfRange:
      ereport(ERROR,
              (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
               errmsg("snowflake ID in base32 \"%s\" is out of range for type bigint", shown),
               errdetail("The largest is \"7ZZZZZZZZZZZZ\"."),
               errhint("Pass the text snowflake_to_base32() returned.")));
      break;
  }
}

// snowflake_decode's row type, blessed once per backend and function: made
// from the function's OUT parameters at every call, it cost four times the
// decoding itself. Both signatures have their own entry.
TupleDesc decoded_row(FunctionCallInfo fcinfo) {
  struct Entry {
    Oid function;
    TupleDesc descriptor;
  };
  static Entry entries[4];
  const Oid function = fcinfo->flinfo->fn_oid;
  for (const Entry& entry : entries)
    if (entry.function == function && likely(OidIsValid(function))) return entry.descriptor;
  TupleDesc descriptor;
  if (get_call_result_type(fcinfo, nullptr, &descriptor) != TYPEFUNC_COMPOSITE)
    elog(ERROR, "snowflake_decode: return type must be a row type");
  MemoryContext previous = MemoryContextSwitchTo(TopMemoryContext);
  descriptor = BlessTupleDesc(CreateTupleDescCopy(descriptor));
  MemoryContextSwitchTo(previous);
  for (Entry& entry : entries) {
    if (OidIsValid(entry.function)) continue;
    entry = {function, descriptor};
    break;
  }
  return descriptor;
}

}  // namespace
}  // namespace snowflake::pg

using namespace snowflake::pg;

// snowflake_decode(id [, layout]), and so on: one C function per SQL name,
// the layout argument optional.
SNOWFLAKE_FUNCTION(snowflake_decode) {
  const int64_t id = PG_GETARG_INT64(0);
  const CallLayout call = call_layout(fcinfo, 1);
  require_valid_id(call, id);
  const TupleDesc descriptor = decoded_row(fcinfo);
  const snowflake::Fields fields = call.layout.decompose(id);
  Datum values[4] = {
      TimestampTzGetDatum(time_of_id(call, id)),
      Int32GetDatum(static_cast<int32>(fields.datacenter_id)),
      Int32GetDatum(static_cast<int32>(fields.worker_id)),
      Int32GetDatum(static_cast<int32>(fields.sequence)),
  };
  bool nulls[4] = {false, false, false, false};
  PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(descriptor, values, nulls)));
}

SNOWFLAKE_FUNCTION(snowflake_timestamp) {
  const int64_t id = PG_GETARG_INT64(0);
  const CallLayout call = call_layout(fcinfo, 1);
  require_valid_id(call, id);
  PG_RETURN_TIMESTAMPTZ(time_of_id(call, id));
}

SNOWFLAKE_FUNCTION(snowflake_compose) {
  const CallLayout call = call_layout(fcinfo, 4);
  const snowflake::Fields fields{id_timestamp(call, PG_GETARG_TIMESTAMPTZ(0), "ts"),
                                 PG_GETARG_INT32(1), PG_GETARG_INT32(2), PG_GETARG_INT32(3)};
  require_fields(call, fields);
  PG_RETURN_INT64(call.layout.compose(fields));
}

SNOWFLAKE_FUNCTION(snowflake_min_id) {
  const CallLayout call = call_layout(fcinfo, 1);
  PG_RETURN_INT64(call.layout.min_id(id_timestamp(call, PG_GETARG_TIMESTAMPTZ(0), "ts")));
}

SNOWFLAKE_FUNCTION(snowflake_max_id) {
  const CallLayout call = call_layout(fcinfo, 1);
  PG_RETURN_INT64(call.layout.max_id(id_timestamp(call, PG_GETARG_TIMESTAMPTZ(0), "ts")));
}

// snowflake_id_span(span): the IDs between the smallest ID of a unit of time
// and that of the unit `span` later, in the server's layout. The interval
// counts as extract(epoch) counts it. A span is at most the time a generator
// of the layout issues over (Layout::max_span): longer, the difference would
// reach the sign bit of a 64-bit layout.
SNOWFLAKE_FUNCTION(snowflake_id_span) {
  const snowflake::Layout& layout = settings.layout;
  const double seconds = DatumGetFloat8(
      DirectFunctionCall2(interval_part, CStringGetTextDatum("epoch"), PG_GETARG_DATUM(0)));
  const double units = std::floor(seconds * 1000.0 / static_cast<double>(layout.unit_ms()));
  if (!(units >= 0) || units > static_cast<double>(layout.max_span())) {
    const double longest_years =
        static_cast<double>(layout.start_ms(layout.max_span())) / (365.25 * 86400 * 1000);
    ereport(
        ERROR,
        (errcode(units < 0 ? ERRCODE_INVALID_PARAMETER_VALUE : ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
         errmsg("snowflake ID span of %s is out of range",
                DatumGetCString(DirectFunctionCall1(interval_out, PG_GETARG_DATUM(0)))),
         errdetail("The span must be at least 0 and at most the time the layout's IDs cover, "
                   "%lld %s (%.1f years).",
                   static_cast<long long>(layout.max_span()), units_text(layout), longest_years),
         errhint("Pass the width of one partition, such as interval '1 day'.")));
  }
  PG_RETURN_INT64(layout.span_ids(static_cast<int64_t>(units)));
}

SNOWFLAKE_FUNCTION(snowflake_to_base32) {
  const int64_t id = PG_GETARG_INT64(0);
  if (id < 0) refuse_negative(id);
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
