// Layouts named in text, and snowflake_layouts(), the presets as a table.
#include "layouts.hpp"

#include <algorithm>
#include <cstring>
#include <new>

#include "boundary.hpp"
#include "text.hpp"

namespace snowflake::pg {

namespace {

const char* preset_names() {
  StringInfoData names;
  initStringInfo(&names);
  for (std::size_t i = 0; i < preset_count(); i++)
    appendStringInfo(&names, "%s%s", i == 0 ? "" : ", ", presets()[i].name);
  return names.data;
}

const char* field_name(LayoutCheck check) {
  switch (check) {
    case LayoutCheck::kTimestampOutOfRange:
      return psprintf("time has %d to %d bits", kMinTimestampBits, kMaxTimestampBits);
    case LayoutCheck::kDatacenterOutOfRange:
      return psprintf("datacenter has %d to %d bits", kMinNodeFieldBits, kMaxNodeFieldBits);
    case LayoutCheck::kWorkerOutOfRange:
      return psprintf("worker has %d to %d bits", kMinNodeFieldBits, kMaxNodeFieldBits);
    case LayoutCheck::kSequenceOutOfRange:
      return psprintf("sequence has %d to %d bits", kMinSequenceBits, kMaxSequenceBits);
    default:
      return nullptr;
  }
}

// A layout's text and the layout, kept in fn_extra between calls.
struct CachedLayout {
  Layout layout;
  std::size_t length;
  char text[FLEXIBLE_ARRAY_MEMBER];
};

}  // namespace

LayoutTextError explain_layout_text(const ParsedLayout& parsed, const char* text,
                                    std::size_t length) {
  const int character = pg_mbstrlen_with_len(text, static_cast<int>(parsed.position)) + 1;
  const char* item = quoted_text(text + parsed.position, parsed.length);
  const char* at = psprintf("At character %d, \"%s\"", character, item);
  const LayoutParts& parts = parsed.parts;
  const char* detail = nullptr;
  switch (parsed.problem) {
    case LayoutTextProblem::kOk:
      detail = "";
      break;
    case LayoutTextProblem::kEmpty:
      detail = "The layout is empty.";
      break;
    case LayoutTextProblem::kUnknownPreset:
      detail = psprintf("\"%s\" is not a preset; the presets are %s.", item, preset_names());
      break;
    case LayoutTextProblem::kNotAnItem:
      detail = psprintf("%s is not an item: after the first, each item is name:value.", at);
      break;
    case LayoutTextProblem::kUnknownName:
      detail =
          psprintf("%s: the names are time, datacenter, worker, sequence, unit and epoch.", at);
      break;
    case LayoutTextProblem::kFieldAfterPreset:
      detail = psprintf("%s: after a preset only unit: and epoch: may follow.", at);
      break;
    case LayoutTextProblem::kRepeated:
      detail = psprintf("%s names a field or option given before.", at);
      break;
    case LayoutTextProblem::kTimeNotFirst:
      detail = psprintf("%s comes before time, the most significant field.", at);
      break;
    case LayoutTextProblem::kBadWidth:
      detail = psprintf("%s: a width is a whole number of bits.", at);
      break;
    case LayoutTextProblem::kBadUnit:
      detail = psprintf("%s: the unit is a number of ms or s, such as 10ms or 1s.", at);
      break;
    case LayoutTextProblem::kBadEpoch:
      detail = psprintf(
          "%s: the epoch is a whole number of milliseconds since 1970-01-01 00:00:00 UTC.", at);
      break;
    case LayoutTextProblem::kNoTime:
      detail = "The specification has no time field.";
      break;
    case LayoutTextProblem::kNoSequence:
      detail = "The specification has no sequence field.";
      break;
    case LayoutTextProblem::kInvalidLayout:
      switch (parsed.check) {
        case LayoutCheck::kTooWide:
          detail = psprintf("The fields add up to %d bits; an ID has at most 64.",
                            parts.timestamp_bits + parts.datacenter_bits + parts.worker_bits +
                                parts.sequence_bits);
          break;
        case LayoutCheck::kUnitOutOfRange:
          detail = psprintf("The unit is %lld ms; it must be between 1ms and 1s.",
                            static_cast<long long>(parts.unit_ms));
          break;
        case LayoutCheck::kTimeTooLong:
          detail = psprintf(
              "%s: 2^%d units of %lld ms after the epoch run past the end of a 64-bit count "
              "of milliseconds (the year 292 million).",
              at, parts.timestamp_bits, static_cast<long long>(parts.unit_ms));
          break;
        default:
          detail = field_name(parsed.check) != nullptr
                       ? psprintf("%s: %s.", at, field_name(parsed.check))
                       : "The layout is not valid.";
          break;
      }
      break;
  }
  (void)length;
  return LayoutTextError{
      detail,
      "A layout is a preset, such as 'sonyflake' or 'sonyflake epoch:1700000000000', or the "
      "fields most significant first with their widths in bits, such as 'time:41 "
      "datacenter:5 worker:5 sequence:12 unit:1ms epoch:1288834974657'."};
}

const Layout& layout_argument(FunctionCallInfo fcinfo, int argno) {
  const text* argument = PG_GETARG_TEXT_PP(argno);
  const char* chars = VARDATA_ANY(argument);
  const std::size_t length = VARSIZE_ANY_EXHDR(argument);
  auto* cached = static_cast<CachedLayout*>(fcinfo->flinfo->fn_extra);
  if (likely(cached != nullptr && cached->length == length &&
             memcmp(cached->text, chars, length) == 0))
    return cached->layout;

  const ParsedLayout parsed = parse_layout(std::string_view(chars, length));
  if (parsed.problem != LayoutTextProblem::kOk) {
    const LayoutTextError error = explain_layout_text(parsed, chars, length);
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg(parsed.problem == LayoutTextProblem::kUnknownPreset
                               ? "unknown snowflake layout \"%s\""
                               : "invalid snowflake layout \"%s\"",
                           quoted_text(chars, length)),
                    errdetail("%s", error.detail), errhint("%s", error.hint)));
  }
  if (cached == nullptr || cached->length < length) {
    void* memory = MemoryContextAlloc(
        fcinfo->flinfo->fn_mcxt, offsetof(CachedLayout, text) + std::max<std::size_t>(length, 1));
    if (cached != nullptr) pfree(cached);
    cached = static_cast<CachedLayout*>(memory);
    fcinfo->flinfo->fn_extra = cached;
  }
  new (&cached->layout) Layout(parsed.parts);
  cached->length = length;
  memcpy(cached->text, chars, length);
  return cached->layout;
}

}  // namespace snowflake::pg

using namespace snowflake::pg;

// The presets: name, canonical specification, total bits, whose layout.
SNOWFLAKE_FUNCTION(snowflake_layouts) {
  InitMaterializedSRF(fcinfo, 0);
  auto* info = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  for (std::size_t i = 0; i < snowflake::preset_count(); i++) {
    const snowflake::Preset& preset = snowflake::presets()[i];
    char specification[snowflake::kLayoutTextSize];
    snowflake::describe_layout(preset.parts, specification, sizeof(specification));
    Datum values[4] = {
        CStringGetTextDatum(preset.name),
        CStringGetTextDatum(specification),
        Int32GetDatum(snowflake::Layout(preset.parts).total_bits()),
        CStringGetTextDatum(preset.system),
    };
    bool nulls[4] = {};
    tuplestore_putvalues(info->setResult, info->setDesc, values, nulls);
  }
  return static_cast<Datum>(0);
}
