// Every snowflake.* setting, defined in one place.
//
// The layout (four widths) and the epoch are fixed at server start: IDs issued
// under one layout do not decode under another. datacenter_id and worker_id
// take effect on reload, so an operator can give a node its identity without a
// restart; the clock policy (max_lead, max_clock_backward_wait) too. None of
// them can be SET in a session: a node's identity and policy are the server's.
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
#include "settings.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "../core/clock.hpp"
#include "compat.hpp"
#include "postgres.hpp"
#include "text.hpp"
#include "time.hpp"

extern "C" {
#include "libpq-fe.h"
}

namespace snowflake::pg {

Settings settings;

namespace {

constexpr int kMaxLeadLimitMs = 24 * 60 * 60 * 1000;
constexpr int kMaxWaitLimitMs = 60 * 1000;
constexpr char kDefaultEpochText[] = "1288834974657";

int64_t epoch_ms = kDefaultEpochMs;

// Without the preload: set once this session's layout is established, after
// which the layout settings refuse every other value.
bool layout_fixed = false;

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

bool parse_epoch(const char* text, int64_t* epoch) {
  char* end = nullptr;
  errno = 0;
  const long long value = strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || value < 0) return false;
  *epoch = value;
  return true;
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
  if (epoch > unix_time_ms()) {
    GUC_check_errdetail("snowflake.epoch must not be in the future; %lld is %s.",
                        static_cast<long long>(epoch),
                        timestamp_text(timestamptz_from_unix_ms(epoch)));
    return false;
  }
  // The GUC machinery frees `extra` with free().
  auto* parsed = static_cast<int64_t*>(malloc(sizeof(int64_t)));
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
  free(*extra);  // PostgreSQL frees `extra` only of a value it accepts.
  *extra = nullptr;
  return false;
}

void assign_epoch(const char*, void* extra) {
  epoch_ms = *static_cast<int64_t*>(extra);
}

int64_t node_of(int datacenter_id, int worker_id) {
  // With no datacenter bits the node is the worker alone; unset means 0 then.
  const bool datacenter_set = datacenter_id >= 0 || settings.layout.datacenter_bits() == 0;
  if (!datacenter_set || worker_id < 0) return -1;
  return settings.layout.node(std::max(datacenter_id, 0), worker_id);
}

void assign_datacenter_id(int newval, void*) {
  settings.node = node_of(newval, settings.worker_id);
}

void assign_worker_id(int newval, void*) {
  settings.node = node_of(settings.datacenter_id, newval);
}

// Whether `value` parses as a libpq connection string; if not, libpq's reason
// goes to `message`.
bool parses_as_conninfo(const char* value, char* message, size_t size) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(value, &error);
  if (options != nullptr) {
    PQconninfoFree(options);
    return true;
  }
  copy_printable(message, size, error != nullptr ? error : "out of memory");
  if (error != nullptr) PQfreemem(error);
  return false;
}

// snowflake.registry's hooks: the value must parse as a libpq connection
// string; assigning it keeps registry_configured. The value may hold a
// password. ALTER SYSTEM (in a transaction) shows its caller the value it
// typed and libpq's reason; a reload never quotes it: every process reloads,
// and PostgreSQL's own message, which quotes the value, goes from a backend to
// its client at DEBUG2, which any role may ask for. libpq's reason, which can
// quote a part of it, then goes only to the server log, from the postmaster.
bool check_registry(char** newval, void**, GucSource) {
  if (*newval == nullptr || (*newval)[0] == '\0') return true;
  char message[512];
  if (parses_as_conninfo(*newval, message, sizeof(message))) return true;
  if (IsTransactionState()) {
    GUC_check_errdetail("snowflake.registry is not a valid libpq connection string: %s.", message);
    return false;
  }
  GUC_check_errmsg("invalid value for parameter \"snowflake.registry\"");
  if (IsUnderPostmaster)
    GUC_check_errdetail(
        "It is not a valid libpq connection string; the server log has the reason.");
  else
    GUC_check_errdetail("It is not a valid libpq connection string: %s.", message);
  return false;
}

void assign_registry(const char* newval, void*) {
  settings.registry_configured = newval != nullptr && newval[0] != '\0';
}

// While the server starts (preload): a snowflake.registry that does not parse
// stops it, as PostgreSQL would otherwise start without the registry.
void require_registry_at_start() {
  const char* raw = GetConfigOption("snowflake.registry", true, false);
  if (raw == nullptr || raw[0] == '\0') return;
  char message[512];
  if (parses_as_conninfo(raw, message, sizeof(message))) return;
  ereport(ERROR,
          (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
           errmsg("invalid value for parameter \"snowflake.registry\""),
           errdetail("It is not a valid libpq connection string: %s.", message),
           errhint("Write it as for psql, such as 'host=registry.example dbname=snowflake "
                   "user=snowflake_node', or remove the setting to run without a registry.")));
}

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

int configured_int(const char* name, int fallback, int min, int max, const char* detail_format,
                   const char* hint) {
  return checked_int(name, GetConfigOption(name, true, false), fallback, min, max, detail_format,
                     hint);
}

// The same for snowflake.epoch.
int64_t checked_epoch(const char* raw) {
  int64_t epoch = kDefaultEpochMs;
  if (raw == nullptr) return epoch;
  if (!parse_epoch(raw, &epoch) || epoch > unix_time_ms()) {
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
             errmsg("invalid value for parameter \"snowflake.epoch\": \"%s\"", raw),
             errdetail("snowflake.epoch must be a whole number of milliseconds since "
                       "1970-01-01 00:00:00 UTC, not in the future."),
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
  const char* raw = reinterpret_cast<const config_string*>(record)->reset_val;
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
void read_layout_width(const char* name, int* variable, int default_value, int min, int max) {
  *variable = checked_int(name, layout_value(name), default_value, min, max,
                          "%s must be an integer between %d and %d.",
                          "The four snowflake.*_bits settings must add up to 63.");
}

// A layout width: a server-start setting when preloading; without the preload,
// where server-start settings cannot be defined, a reload setting that keeps
// the value a session first used (keep_layout).
void define_layout_setting(const char* name, const char* description, int* variable,
                           int default_value, int min, int max, GucIntCheckHook keep) {
  const bool preloading = process_shared_preload_libraries_in_progress;
  DefineCustomIntVariable(
      name, description, nullptr, variable, preloading ? *variable : default_value, min, max,
      preloading ? PGC_POSTMASTER : PGC_SIGHUP, 0, preloading ? nullptr : keep, nullptr, nullptr);
}

const char* layout_problem(LayoutCheck check) {
  switch (check) {
    case LayoutCheck::kOk:
      break;
    case LayoutCheck::kWrongTotal:
      return "the snowflake ID layout does not add up to 63 bits";
    case LayoutCheck::kTimestampOutOfRange:
      return "snowflake.timestamp_bits must be between 1 and 61";
    case LayoutCheck::kDatacenterOutOfRange:
      return "snowflake.datacenter_bits must be between 0 and 30";
    case LayoutCheck::kWorkerOutOfRange:
      return "snowflake.worker_bits must be between 1 and 30";
    case LayoutCheck::kSequenceOutOfRange:
      return "snowflake.sequence_bits must be between 1 and 61";
  }
  return nullptr;
}

void establish_layout() {
  const LayoutCheck check = Layout::check(settings.timestamp_bits, settings.datacenter_bits,
                                          settings.worker_bits, settings.sequence_bits);
  if (check != LayoutCheck::kOk) {
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s", layout_problem(check)),
             errdetail("snowflake.timestamp_bits = %d, snowflake.datacenter_bits = %d, "
                       "snowflake.worker_bits = %d, snowflake.sequence_bits = %d: %d bits in all.",
                       settings.timestamp_bits, settings.datacenter_bits, settings.worker_bits,
                       settings.sequence_bits,
                       settings.timestamp_bits + settings.datacenter_bits + settings.worker_bits +
                           settings.sequence_bits),
             errhint("Choose widths that add up to 63, such as the default 41, 5, 5 and 12.")));
  }
  settings.layout = Layout(settings.timestamp_bits, settings.datacenter_bits, settings.worker_bits,
                           settings.sequence_bits, epoch_ms);
  const int64_t now = unix_time_ms();
  if (now > settings.layout.last_unix_ms()) {
    const TimestampTz last = timestamptz_from_unix_ms(settings.layout.last_unix_ms());
    ereport(
        ERROR,
        (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
         errmsg("the snowflake timestamp field ran out at %s", timestamp_text(last)),
         errdetail("snowflake.timestamp_bits = %d counts %lld ms from snowflake.epoch = %lld.",
                   settings.timestamp_bits, static_cast<long long>(settings.layout.max_timestamp()),
                   static_cast<long long>(epoch_ms)),
         errhint("Use a later snowflake.epoch or a wider snowflake.timestamp_bits.")));
  }
}

void define_id_setting(const char* name, const char* description, const char* width_name,
                       int* variable, int64_t max, GucIntAssignHook assign) {
  const char* hint = psprintf(
      "Give every node a value no other node uses, within the range; or widen %s.", width_name);
  // Without the preload no ID is issued, and the value read here could be a
  // session's; PostgreSQL's own checks (a WARNING) are enough then.
  if (process_shared_preload_libraries_in_progress)
    (void)configured_int(name, -1, -1, static_cast<int>(max),
                         "%s must be between %d (unset) and %d, the largest value its field of "
                         "the ID layout holds.",
                         hint);
  DefineCustomIntVariable(
      name, description, "-1 means unset: snowflake_nextval() then refuses to issue IDs.", variable,
      -1, -1, static_cast<int>(max), PGC_SIGHUP, 0, nullptr, assign, nullptr);
}

}  // namespace

void define_settings() {
  const bool preloading = process_shared_preload_libraries_in_progress;
  read_layout_width("snowflake.timestamp_bits", &settings.timestamp_bits, kDefaultTimestampBits, 1,
                    kIdBits - 2);
  read_layout_width("snowflake.datacenter_bits", &settings.datacenter_bits, kDefaultDatacenterBits,
                    0, kMaxNodeFieldBits);
  read_layout_width("snowflake.worker_bits", &settings.worker_bits, kDefaultWorkerBits, 1,
                    kMaxNodeFieldBits);
  read_layout_width("snowflake.sequence_bits", &settings.sequence_bits, kDefaultSequenceBits, 1,
                    kIdBits - 2);
  epoch_ms = checked_epoch(layout_value("snowflake.epoch"));
  // Without the preload, a layout that does not add up fails here, before any
  // setting is defined, so the next call in the session fails the same way.
  if (!preloading) establish_layout();

  define_layout_setting("snowflake.timestamp_bits", "Width of the ID's millisecond timestamp.",
                        &settings.timestamp_bits, kDefaultTimestampBits, 1, kIdBits - 2,
                        [](int* newval, void**, GucSource) {
                          return keep_layout("snowflake.timestamp_bits",
                                             settings.layout.timestamp_bits(), *newval);
                        });
  define_layout_setting("snowflake.datacenter_bits", "Width of the ID's datacenter_id field.",
                        &settings.datacenter_bits, kDefaultDatacenterBits, 0, kMaxNodeFieldBits,
                        [](int* newval, void**, GucSource) {
                          return keep_layout("snowflake.datacenter_bits",
                                             settings.layout.datacenter_bits(), *newval);
                        });
  define_layout_setting(
      "snowflake.worker_bits", "Width of the ID's worker_id field.", &settings.worker_bits,
      kDefaultWorkerBits, 1, kMaxNodeFieldBits, [](int* newval, void**, GucSource) {
        return keep_layout("snowflake.worker_bits", settings.layout.worker_bits(), *newval);
      });
  define_layout_setting("snowflake.sequence_bits", "Width of the ID's per-millisecond sequence.",
                        &settings.sequence_bits, kDefaultSequenceBits, 1, kIdBits - 2,
                        [](int* newval, void**, GucSource) {
                          return keep_layout("snowflake.sequence_bits",
                                             settings.layout.sequence_bits(), *newval);
                        });
  DefineCustomStringVariable(
      "snowflake.epoch", "Milliseconds since 1970-01-01 UTC at which ID timestamps start.", nullptr,
      &settings.epoch_text, kDefaultEpochText, preloading ? PGC_POSTMASTER : PGC_SIGHUP, 0,
      preloading ? check_epoch : check_kept_epoch, assign_epoch, nullptr);
  // From the values PostgreSQL applied: without the preload, the server's
  // values read above (a session's were refused), so this cannot fail then.
  establish_layout();
  if (!preloading) layout_fixed = true;

  define_id_setting("snowflake.datacenter_id", "This node's datacenter_id in the IDs it issues.",
                    "snowflake.datacenter_bits", &settings.datacenter_id,
                    settings.layout.max_datacenter_id(), assign_datacenter_id);
  define_id_setting("snowflake.worker_id", "This node's worker_id in the IDs it issues.",
                    "snowflake.worker_bits", &settings.worker_id, settings.layout.max_worker_id(),
                    assign_worker_id);

  DefineCustomIntVariable(
      "snowflake.max_lead",
      "How far ahead of the clock the generator's timestamp may run without waiting.",
      "0 is the original Snowflake: wait for the next millisecond when one is used up.",
      &settings.max_lead_ms, 0, 0, kMaxLeadLimitMs, PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr,
      nullptr);
  DefineCustomIntVariable(
      "snowflake.max_clock_backward_wait",
      "How long to wait for a clock that is behind the generator before failing.",
      "0 fails at once, as Twitter's IdWorker does.", &settings.max_clock_backward_wait_ms, 1000, 0,
      kMaxWaitLimitMs, PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr, nullptr);

  // Registry (issue 4): the worker-identity registry, see src/pg/registry/. --
  if (process_shared_preload_libraries_in_progress) require_registry_at_start();
  DefineCustomStringVariable(
      "snowflake.registry",
      "libpq connection string of the database in which nodes lease their identities.",
      "Empty means no registry. It may hold a password, so only superusers can read it.",
      &settings.registry, "", PGC_SIGHUP, GUC_SUPERUSER_ONLY, check_registry, assign_registry,
      nullptr);
  DefineCustomIntVariable(
      "snowflake.registry_lease", "How long a claim in the registry lasts without renewal.",
      "The node renews it every third of this, and issues IDs for nine tenths of it after the "
      "last renewal it sent.",
      &settings.registry_lease_ms, 30000, 1000, 60 * 60 * 1000, PGC_SIGHUP, GUC_UNIT_MS, nullptr,
      nullptr, nullptr);
  // End of the registry's settings. ---------------------------------------------

  MarkGUCPrefixReserved("snowflake");
}

int64_t configured_node() {
  if (settings.node >= 0) return settings.node;
  const bool datacenter_missing =
      settings.datacenter_id < 0 && settings.layout.datacenter_bits() > 0;
  const char* name = datacenter_missing ? "snowflake.datacenter_id" : "snowflake.worker_id";
  const int64_t max =
      datacenter_missing ? settings.layout.max_datacenter_id() : settings.layout.max_worker_id();
  ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE), errmsg("%s is not set", name),
                  errdetail("snowflake_nextval() needs this node's snowflake.datacenter_id and "
                            "snowflake.worker_id to keep its IDs apart from every other node's."),
                  errhint("Set %s (0-%lld) in postgresql.conf to a value no other node uses, then "
                          "reload.",
                          name, static_cast<long long>(max))));
  pg_unreachable();
}

}  // namespace snowflake::pg
