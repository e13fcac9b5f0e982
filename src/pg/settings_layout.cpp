// The ID layout and its epoch, the settings fixed when the server starts:
// snowflake.layout, the four snowflake.*_bits widths and snowflake.epoch.
// They are read from the configuration before they are defined (a value
// PostgreSQL would only warn about must instead stop the server: IDs issued
// under another layout than configured do not decode), checked, and become
// settings.layout.
//
// A layout that is not valid is a configuration error and stops the server.
// A clock outside the layout's range is not: the clock may be the wrong one
// (a VM restored without NTP, a board without a battery), and an epoch later
// than the clock says nothing else about the configuration. The server then
// starts, the log says why (a WARNING naming the clock's reading and the
// layout's range), and issuing refuses per call until the clock is right
// (issue.cpp: kClockBeforeEpoch, kTimestampExhausted). An end within a year
// is logged too, then once a day (layout_end.cpp).
//
// Without the preload the library is loaded by each session that first uses
// it, and until then any session can SET the placeholders of these names.
// The layout and epoch are then PGC_SIGHUP settings whose value is the
// server's configuration (postgresql.conf, ALTER SYSTEM, the command line):
// PostgreSQL refuses a session's value when the library defines them (WARNING)
// and any SET afterwards; a value a session's connection options or role
// gave them replaces the server's in the placeholder, so loading then fails.
// Once a session has loaded the library its layout is fixed: a reload that
// changes it is refused in that session (logged), so SHOW never lies.
#include "settings_layout.hpp"

#include <cerrno>
#include <cstdlib>

#include "../core/clock.hpp"
#include "../core/layout_text.hpp"
#include "compat.hpp"
#include "layout_end.hpp"
#include "layouts.hpp"
#include "postgres.hpp"
#include "settings.hpp"
#include "text.hpp"
#include "time.hpp"

namespace snowflake::pg {
namespace {

constexpr char kDefaultEpochText[] = "1288834974657";

int64_t epoch_ms = kDefaultEpochMs;

// What the configuration sets, read before the settings are defined: which
// widths and whether the epoch (snowflake.layout wins over the widths, the
// epoch over the layout's), and the layout's text as it was when the layout
// was established ("" for none).
bool width_configured[4] = {};
bool epoch_configured = false;
const char* layout_in_use = "";
// The epoch's default: the layout's own (a preset's may differ from Twitter's).
char epoch_boot_text[24];

// Without the preload: set once this session's layout is established, after
// which the layout settings refuse every other value.
bool layout_fixed = false;

// The value the configuration gives `name`, read before (or instead of)
// defining it: `fallback` if it is not set, an error if it is not an integer
// in [min, max]. At server start PostgreSQL would only warn about a bad value
// of an extension's setting and use the default instead, which for the layout,
// the epoch and the node's identity means silently issuing other IDs than
// configured; this check stops the server instead, as a bad value of a
// built-in setting does.
int checked_int(const char* name, const char* raw, int fallback, int min, int max,
                const char* detail_format, const char* hint) {
  if (raw == nullptr) return fallback;
  int value = 0;
  const char* parse_hint = nullptr;
  if (!parse_int(raw, &value, 0, &parse_hint) || value < min || value > max) {
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("invalid value for parameter \"%s\": \"%s\"", name, raw),
                    errdetail(detail_format, name, min, max), errhint("%s", hint)));
  }
  return value;
}

// A layout setting's check hook without the preload: once the layout is
// fixed, a value other than the one in use is refused (and logged, since
// PostgreSQL reports a refused reload in a backend only at DEBUG2).
bool keep_layout(const char* name, long long in_use, long long newval) {
  if (!layout_fixed || newval == in_use) return true;
  ereport(LOG, (errmsg("%s stays %lld in the session of process %d", name, in_use, MyProcPid),
                errdetail("The configuration gives %lld; the ID layout of a session is fixed "
                          "when it first uses snowflake.",
                          newval)));
  GUC_check_errcode(ERRCODE_CANT_CHANGE_RUNTIME_PARAM);
  GUC_check_errdetail(
      "This session uses %s = %lld since it first used snowflake; the ID layout "
      "of a session never changes.",
      name, in_use);
  GUC_check_errhint(
      "Sessions that start after the change use the new value. Choose the layout "
      "before the first ID: IDs issued under one layout do not decode under "
      "another.");
  return false;
}

// snowflake.layout's check hook: a preset or a specification; without the
// preload, also the one in use once the layout is fixed.
bool check_layout(char** newval, void**, GucSource) {
  const char* value = *newval != nullptr ? *newval : "";
  if (value[0] != '\0') {
    const ParsedLayout parsed = parse_layout(value);
    if (parsed.problem != LayoutTextProblem::kOk) {
      const LayoutTextError error = explain_layout_text(parsed, value, strlen(value));
      GUC_check_errdetail("%s", error.detail);
      GUC_check_errhint("%s", error.hint);
      return false;
    }
  }
  if (process_shared_preload_libraries_in_progress || !layout_fixed ||
      strcmp(value, layout_in_use) == 0)
    return true;
  ereport(LOG, (errmsg("snowflake.layout stays '%s' in the session of process %d", layout_in_use,
                       MyProcPid),
                errdetail("The configuration gives '%s'; the ID layout of a session is fixed "
                          "when it first uses snowflake.",
                          value)));
  GUC_check_errcode(ERRCODE_CANT_CHANGE_RUNTIME_PARAM);
  GUC_check_errdetail(
      "This session uses snowflake.layout = '%s' since it first used snowflake; the ID layout "
      "of a session never changes.",
      layout_in_use);
  GUC_check_errhint(
      "Sessions that start after the change use the new value. Choose the layout before the "
      "first ID: IDs issued under one layout do not decode under another.");
  return false;
}

bool parse_epoch(const char* text, int64_t* epoch) {
  char* end = nullptr;
  errno = 0;
  const long long value = strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || value < 0) return false;
  *epoch = value;
  return true;
}

// The layout `parts` with `epoch` as its epoch, or what is wrong with it: an
// epoch so late that the layout's time field would run past a 64-bit count
// of milliseconds. (An epoch later than the clock is no fault of the
// configuration: see the file's header.)
LayoutCheck check_epoch_of(LayoutParts parts, int64_t epoch) {
  parts.epoch_ms = epoch;
  return Layout::check(parts);
}

const char* epoch_problem_detail(const LayoutParts& parts, int64_t epoch) {
  return psprintf(
      "With snowflake.epoch = %lld, 2^%d units of %lld ms after it run past the end of a 64-bit "
      "count of milliseconds (the year 292 million).",
      static_cast<long long>(epoch), parts.timestamp_bits, static_cast<long long>(parts.unit_ms));
}

bool check_epoch(char** newval, void** extra, GucSource) {
  int64_t epoch = 0;
  if (!parse_epoch(*newval, &epoch)) {
    GUC_check_errdetail(
        "snowflake.epoch must be a whole number of milliseconds since 1970-01-01 00:00:00 UTC, "
        "such as %s.",
        kDefaultEpochText);
    return false;
  }
  if (check_epoch_of(settings.layout.parts(), epoch) != LayoutCheck::kOk) {
    GUC_check_errdetail("%s", epoch_problem_detail(settings.layout.parts(), epoch));
    GUC_check_errhint(
        "Use the epoch at which the layout's first IDs were (or will be) issued, "
        "such as %s.",
        kDefaultEpochText);
    return false;
  }
  auto* parsed = static_cast<int64_t*>(compat::guc_extra_alloc(sizeof(int64_t)));
  if (parsed == nullptr) return false;
  *parsed = epoch;
  *extra = parsed;
  return true;
}

// snowflake.epoch's check hook without the preload.
bool check_kept_epoch(char** newval, void** extra, GucSource source) {
  if (!check_epoch(newval, extra, source)) return false;
  if (keep_layout("snowflake.epoch", static_cast<long long>(settings.layout.epoch_ms()),
                  static_cast<long long>(*static_cast<int64_t*>(*extra))))
    return true;
  compat::guc_extra_free(*extra);
  *extra = nullptr;
  return false;
}

void assign_epoch(const char*, void* extra) {
  epoch_ms = *static_cast<int64_t*>(extra);
}

// The same for snowflake.epoch.
int64_t checked_epoch(const char* raw) {
  int64_t epoch = kDefaultEpochMs;
  if (raw == nullptr) return epoch;
  if (!parse_epoch(raw, &epoch)) {
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
             errmsg("invalid value for parameter \"snowflake.epoch\": \"%s\"", raw),
             errdetail("snowflake.epoch must be a whole number of milliseconds since "
                       "1970-01-01 00:00:00 UTC."),
             errhint("Remove the setting to use Twitter's epoch (%s), or set it once, before the "
                     "first ID is issued, and never change it.",
                     kDefaultEpochText)));
  }
  return epoch;
}

// Without the preload: the value the server's configuration gives the layout
// setting `name`, read from its placeholder before the setting is defined, or
// nullptr if it gives none. Only a value set by the server (its reset value,
// set in a context PGC_SIGHUP accepts) counts; a session's SET is not its reset
// value. A reset value from the connection's options or ALTER ROLE/DATABASE
// has replaced the server's, which is then unknown: an error.
const char* server_value(const char* name) {
  const config_generic* record = compat::find_setting_record(name);
  if (record == nullptr || (record->flags & GUC_CUSTOM_PLACEHOLDER) == 0) return nullptr;
  const char* raw = compat::placeholder_reset_value(record);
  if (raw == nullptr || record->reset_scontext <= PGC_SIGHUP) return raw;
  const bool from_client = record->reset_source == PGC_S_CLIENT;
  ereport(
      ERROR,
      (errcode(ERRCODE_CANT_CHANGE_RUNTIME_PARAM),
       errmsg("parameter \"%s\" cannot be set for a session", name),
       errdetail("%s set it to \"%s\"; the ID layout is the server's, the same in every "
                 "session.",
                 from_client ? "This connection's options" : "ALTER ROLE or ALTER DATABASE", raw),
       errhint(from_client ? "Remove %s from the connection's options (PGOPTIONS); set it in "
                             "postgresql.conf."
                           : "As a superuser, ALTER ROLE or ALTER DATABASE ... RESET %s; set it in "
                             "postgresql.conf.",
               name)));
  pg_unreachable();
}

// A layout setting's value: when preloading, the configuration's (only the
// server's configuration is read at server start); otherwise the server's
// value from its placeholder, never a session's.
const char* layout_value(const char* name) {
  return process_shared_preload_libraries_in_progress ? GetConfigOption(name, true, false)
                                                      : server_value(name);
}

// Reads a layout width; an error if the configured value is not valid.
// Returns whether the configuration sets it.
bool read_layout_width(const char* name, int* variable, int default_value, int min, int max) {
  const char* raw = layout_value(name);
  *variable =
      checked_int(name, raw, default_value, min, max, "%s must be an integer between %d and %d.",
                  "The four snowflake.*_bits settings add up to at most 64 bits.");
  return raw != nullptr;
}

// A layout width: a server-start setting when preloading; without the preload,
// where server-start settings cannot be defined, a reload setting that keeps
// the value a session first used (keep_layout). Its default is the width of
// the layout in use, so SHOW gives it also when snowflake.layout sets it.
void define_layout_setting(const char* name, const char* description, int* variable, int min,
                           int max, GucIntCheckHook keep) {
  const bool preloading = process_shared_preload_libraries_in_progress;
  DefineCustomIntVariable(name, description, nullptr, variable, *variable, min, max,
                          preloading ? PGC_POSTMASTER : PGC_SIGHUP, 0, preloading ? nullptr : keep,
                          nullptr, nullptr);
}

const char* layout_problem(LayoutCheck check) {
  switch (check) {
    case LayoutCheck::kOk:
      break;
    case LayoutCheck::kTooWide:
      return "the snowflake ID layout adds up to more than 64 bits";
    case LayoutCheck::kTimestampOutOfRange:
      return psprintf("snowflake.timestamp_bits must be between %d and %d", kMinTimestampBits,
                      kMaxTimestampBits);
    case LayoutCheck::kDatacenterOutOfRange:
      return psprintf("snowflake.datacenter_bits must be between %d and %d", kMinNodeFieldBits,
                      kMaxNodeFieldBits);
    case LayoutCheck::kWorkerOutOfRange:
      return psprintf("snowflake.worker_bits must be between %d and %d", kMinNodeFieldBits,
                      kMaxNodeFieldBits);
    case LayoutCheck::kSequenceOutOfRange:
      return psprintf("snowflake.sequence_bits must be between %d and %d", kMinSequenceBits,
                      kMaxSequenceBits);
    case LayoutCheck::kUnitOutOfRange:
    case LayoutCheck::kTimeTooLong:
    case LayoutCheck::kEpochOutOfRange:
    case LayoutCheck::kOrderInvalid:
      return "the snowflake ID layout is not valid";
  }
  return nullptr;
}

// snowflake.epoch (configured) is so late that `parts` with it is no layout.
void refuse_late_epoch(const LayoutParts& parts) {
  ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                  errmsg("invalid value for parameter \"snowflake.epoch\": \"%lld\"",
                         static_cast<long long>(epoch_ms)),
                  errdetail("%s", epoch_problem_detail(parts, epoch_ms)),
                  errhint("Use the epoch at which the layout's first IDs were (or will be) "
                          "issued, or remove snowflake.epoch.")));
}

// The layout snowflake.layout names (`text`), with snowflake.epoch as its
// epoch if the configuration sets it; an error if it is not a layout or a
// width setting contradicts it.
LayoutParts layout_of_setting(const char* text) {
  const ParsedLayout parsed = parse_layout(text);
  if (parsed.problem != LayoutTextProblem::kOk) {
    const LayoutTextError error = explain_layout_text(parsed, text, strlen(text));
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("invalid value for parameter \"snowflake.layout\": \"%s\"",
                           quoted_text(text, strlen(text))),
                    errdetail("%s", error.detail), errhint("%s", error.hint)));
  }
  LayoutParts parts = parsed.parts;
  if (epoch_configured) {
    if (check_epoch_of(parts, epoch_ms) != LayoutCheck::kOk) refuse_late_epoch(parts);
    parts.epoch_ms = epoch_ms;
  }
  const struct {
    const char* name;
    int configured;
    int in_layout;
  } widths[4] = {
      {"snowflake.timestamp_bits", settings.timestamp_bits, parts.timestamp_bits},
      {"snowflake.datacenter_bits", settings.datacenter_bits, parts.datacenter_bits},
      {"snowflake.worker_bits", settings.worker_bits, parts.worker_bits},
      {"snowflake.sequence_bits", settings.sequence_bits, parts.sequence_bits},
  };
  for (int i = 0; i < 4; i++) {
    if (!width_configured[i] || widths[i].configured == widths[i].in_layout) continue;
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("%s = %d contradicts snowflake.layout = '%s'", widths[i].name,
                           widths[i].configured, quoted_text(text, strlen(text))),
                    errdetail("That layout gives the field %d bits.", widths[i].in_layout),
                    errhint("Remove %s from the configuration: snowflake.layout sets every width.",
                            widths[i].name)));
  }
  return parts;
}

// The layout the configuration gives: snowflake.layout (`layout_text`, read
// before the setting is defined) if it is set, else the four widths in
// Twitter's order, in milliseconds; and snowflake.epoch.
void establish_layout(const char* layout_text) {
  const char* text = layout_text != nullptr ? layout_text : "";
  LayoutParts parts{settings.timestamp_bits,
                    settings.datacenter_bits,
                    settings.worker_bits,
                    settings.sequence_bits,
                    kTwitterOrder,
                    1,
                    epoch_ms};
  if (text[0] != '\0') {
    parts = layout_of_setting(text);
  } else if (const LayoutCheck check = Layout::check(parts); check != LayoutCheck::kOk) {
    if (check == LayoutCheck::kTimeTooLong && epoch_configured &&
        check_epoch_of(parts, kDefaultEpochMs) == LayoutCheck::kOk)
      refuse_late_epoch(parts);
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s", layout_problem(check)),
             errdetail("snowflake.timestamp_bits = %d, snowflake.datacenter_bits = %d, "
                       "snowflake.worker_bits = %d, snowflake.sequence_bits = %d: %d bits in all.",
                       settings.timestamp_bits, settings.datacenter_bits, settings.worker_bits,
                       settings.sequence_bits,
                       settings.timestamp_bits + settings.datacenter_bits + settings.worker_bits +
                           settings.sequence_bits),
             errhint("Choose widths that add up to at most 64, such as the default 41, 5, 5 and "
                     "12, or set snowflake.layout.")));
  }
  settings.layout = Layout(parts);
  layout_in_use = MemoryContextStrdup(TopMemoryContext, text);
  // The widths show the layout's; the epoch's default is the layout's.
  settings.timestamp_bits = parts.timestamp_bits;
  settings.datacenter_bits = parts.datacenter_bits;
  settings.worker_bits = parts.worker_bits;
  settings.sequence_bits = parts.sequence_bits;
  epoch_ms = parts.epoch_ms;
  snprintf(epoch_boot_text, sizeof(epoch_boot_text), "%lld",
           static_cast<long long>(parts.epoch_ms));

  // A clock outside the layout's range, or the layout's end within a year:
  // logged once, by the postmaster (layout_end.cpp).
  if (process_shared_preload_libraries_in_progress) warn_of_layout_end_at_start();
}

}  // namespace

int configured_int(const char* name, int fallback, int min, int max, const char* detail_format,
                   const char* hint) {
  return checked_int(name, GetConfigOption(name, true, false), fallback, min, max, detail_format,
                     hint);
}

void establish_configured_layout() {
  width_configured[0] =
      read_layout_width("snowflake.timestamp_bits", &settings.timestamp_bits, kDefaultTimestampBits,
                        kMinTimestampBits, kMaxTimestampBits);
  width_configured[1] =
      read_layout_width("snowflake.datacenter_bits", &settings.datacenter_bits,
                        kDefaultDatacenterBits, kMinNodeFieldBits, kMaxNodeFieldBits);
  width_configured[2] = read_layout_width("snowflake.worker_bits", &settings.worker_bits,
                                          kDefaultWorkerBits, kMinNodeFieldBits, kMaxNodeFieldBits);
  width_configured[3] = read_layout_width("snowflake.sequence_bits", &settings.sequence_bits,
                                          kDefaultSequenceBits, kMinSequenceBits, kMaxSequenceBits);
  const char* raw_epoch = layout_value("snowflake.epoch");
  epoch_ms = checked_epoch(raw_epoch);
  epoch_configured = raw_epoch != nullptr;
  // A layout that is not valid fails here, before any setting is defined:
  // at server start it stops the server; without the preload, the next call
  // in the session fails the same way. (The setting's own variable belongs
  // to the GUC machinery, which frees what it holds when it is defined.)
  establish_layout(layout_value("snowflake.layout"));
}

void define_layout_settings() {
  const bool preloading = process_shared_preload_libraries_in_progress;

  DefineCustomStringVariable(
      "snowflake.layout",
      "The ID layout: a preset (twitter, sonyflake, ...) or a specification of the fields.",
      "Empty means the four snowflake.*_bits settings, in Twitter's order, in milliseconds.",
      &settings.layout_text, "", preloading ? PGC_POSTMASTER : PGC_SIGHUP, 0, check_layout, nullptr,
      nullptr);
  define_layout_setting(
      "snowflake.timestamp_bits", "Width of the ID's timestamp.", &settings.timestamp_bits,
      kMinTimestampBits, kMaxTimestampBits, [](int* newval, void**, GucSource) {
        return keep_layout("snowflake.timestamp_bits", settings.layout.timestamp_bits(), *newval);
      });
  define_layout_setting("snowflake.datacenter_bits", "Width of the ID's datacenter_id field.",
                        &settings.datacenter_bits, kMinNodeFieldBits, kMaxNodeFieldBits,
                        [](int* newval, void**, GucSource) {
                          return keep_layout("snowflake.datacenter_bits",
                                             settings.layout.datacenter_bits(), *newval);
                        });
  define_layout_setting(
      "snowflake.worker_bits", "Width of the ID's worker_id field.", &settings.worker_bits,
      kMinNodeFieldBits, kMaxNodeFieldBits, [](int* newval, void**, GucSource) {
        return keep_layout("snowflake.worker_bits", settings.layout.worker_bits(), *newval);
      });
  define_layout_setting(
      "snowflake.sequence_bits", "Width of the ID's sequence.", &settings.sequence_bits,
      kMinSequenceBits, kMaxSequenceBits, [](int* newval, void**, GucSource) {
        return keep_layout("snowflake.sequence_bits", settings.layout.sequence_bits(), *newval);
      });
  DefineCustomStringVariable(
      "snowflake.epoch", "Milliseconds since 1970-01-01 UTC at which ID timestamps start.",
      "By default the epoch of snowflake.layout, or Twitter's.", &settings.epoch_text,
      epoch_boot_text, preloading ? PGC_POSTMASTER : PGC_SIGHUP, 0,
      preloading ? check_epoch : check_kept_epoch, assign_epoch, nullptr);
  if (!preloading) layout_fixed = true;
}

}  // namespace snowflake::pg
