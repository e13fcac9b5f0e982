// Every snowflake.* setting, defined in one place: the layout and its epoch
// (settings_layout.cpp reads, checks and defines them), the node's identity,
// the clock policy, the registry's settings and the keys file of public IDs,
// defined here.
//
// The layout (snowflake.layout, or the four widths) and the epoch are fixed
// at server start: IDs issued under one layout do not decode under another.
// datacenter_id and worker_id take effect on reload, so an operator can give a
// node its identity without a restart; the clock policy (max_lead,
// max_clock_backward_wait) too. None of them can be SET in a session: a node's
// identity and policy are the server's.
#include "settings.hpp"

#include <algorithm>

#include "../core/layout_text.hpp"
#include "postgres.hpp"
#include "public_id_keys.hpp"
#include "settings_layout.hpp"
#include "text.hpp"

extern "C" {
#include "libpq-fe.h"
}

namespace snowflake::pg {

Settings settings;

namespace {

constexpr int kMaxLeadLimitMs = 24 * 60 * 60 * 1000;
constexpr int kMaxWaitLimitMs = 60 * 1000;

int64_t node_of(int datacenter_id, int worker_id) {
  // A field the layout does not have is 0, set or not.
  const bool datacenter_set = datacenter_id >= 0 || settings.layout.datacenter_bits() == 0;
  const bool worker_set = worker_id >= 0 || settings.layout.worker_bits() == 0;
  if (!datacenter_set || !worker_set) return -1;
  return settings.layout.node(std::max(datacenter_id, 0), std::max(worker_id, 0));
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

// The field of the ID layout `name` sets ("datacenter_id", "worker_id").
struct IdField {
  const char* name;   // snowflake.datacenter_id
  const char* field;  // datacenter_id
  int bits;           // its width in the layout
  int64_t max;        // its largest value
};

IdField datacenter_field() {
  return {"snowflake.datacenter_id", "datacenter_id", settings.layout.datacenter_bits(),
          settings.layout.max_datacenter_id()};
}

IdField worker_field() {
  return {"snowflake.worker_id", "worker_id", settings.layout.worker_bits(),
          settings.layout.max_worker_id()};
}

// While the server starts (preload): a value of `field` that the layout cannot
// hold stops the server. A field the layout does not have (0 bits, such as
// datacenter_id in Sonyflake's) must not be set: a leftover value would say
// the node is told apart by it, which its IDs cannot show.
void require_id_in_layout(const IdField& field) {
  const char* raw = GetConfigOption(field.name, true, false);
  if (raw == nullptr) return;
  int value = 0;
  if (field.bits == 0 && parse_int(raw, &value, 0, nullptr) && value >= 0) {
    char layout_text[kLayoutTextSize];
    describe_layout(settings.layout.parts(), layout_text, sizeof(layout_text));
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("%s is set, but the ID layout has no %s field", field.name, field.field),
                    errdetail("%s = %d; the layout %s gives %s 0 bits, so its IDs tell nodes apart "
                              "by their other node field alone.",
                              field.name, value, layout_text, field.field),
                    errhint("Remove %s from the configuration.", field.name)));
  }
  (void)configured_int(field.name, -1, -1, static_cast<int>(field.max),
                       "%s must be between %d (unset) and %d, the largest value its field of the "
                       "ID layout holds.",
                       "Give every node a value no other node uses, within that range.");
}

void define_id_setting(const IdField& field, const char* description, int* variable,
                       GucIntAssignHook assign) {
  // Without the preload no ID is issued, and the value read here could be a
  // session's; PostgreSQL's own checks (a WARNING) are enough then.
  if (process_shared_preload_libraries_in_progress) require_id_in_layout(field);
  DefineCustomIntVariable(
      field.name, description, "-1 means unset: snowflake_nextval() then refuses to issue IDs.",
      variable, -1, -1, static_cast<int>(field.max), PGC_SIGHUP, 0, nullptr, assign, nullptr);
}

}  // namespace

void define_settings() {
  // A layout that is not valid fails here, before any setting is defined:
  // at server start it stops the server; without the preload, the next call
  // in the session fails the same way.
  establish_configured_layout();
  define_layout_settings();

  define_id_setting(datacenter_field(), "This node's datacenter_id in the IDs it issues.",
                    &settings.datacenter_id, assign_datacenter_id);
  define_id_setting(worker_field(), "This node's worker_id in the IDs it issues.",
                    &settings.worker_id, assign_worker_id);

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

  // Public IDs (issue 40): the file of their keys; public_id_keys.cpp reads
  // it. A path, never a key: PostgreSQL logs a setting's new value at reload.
  if (process_shared_preload_libraries_in_progress) require_public_id_keys_at_start();
  DefineCustomStringVariable(
      "snowflake.public_id_keys_file",
      "File of the keys of public IDs (snowflake_to_public, snowflake_from_public).",
      "Read by the server at start and at every reload, never by a parallel worker. Empty means "
      "no key: the functions refuse. Only superusers can read the setting; no SQL reads the keys.",
      &settings.public_id_keys_file, "", PGC_SIGHUP, GUC_SUPERUSER_ONLY, check_public_id_keys_file,
      assign_public_id_keys_file, nullptr);

  MarkGUCPrefixReserved("snowflake");
}

// Every setting of the node's identity that is missing is named at once, so
// that setting what the hint says is enough.
int64_t configured_node() {
  if (settings.node >= 0) return settings.node;
  const IdField fields[2] = {datacenter_field(), worker_field()};
  const IdField* missing[2] = {};
  int count = 0;
  if (settings.datacenter_id < 0 && fields[0].bits > 0) missing[count++] = &fields[0];
  if (settings.worker_id < 0 && fields[1].bits > 0) missing[count++] = &fields[1];
  if (count == 0) elog(ERROR, "snowflake: the node's identity is set but its node field is not");
  const bool both = count == 2;
  ereport(
      ERROR,
      (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
       both ? errmsg("%s and %s are not set", missing[0]->name, missing[1]->name)
            : errmsg("%s is not set", missing[0]->name),
       errdetail("snowflake_nextval() needs this node's identity in the ID layout (%s) to keep "
                 "its IDs apart from every other node's.",
                 fields[0].bits > 0 && fields[1].bits > 0 ? "datacenter_id and worker_id"
                 : fields[0].bits > 0                     ? "datacenter_id"
                                                          : "worker_id"),
       both ? errhint("Set %s (0-%lld) and %s (0-%lld) in postgresql.conf to a pair no other node "
                      "uses, then reload.",
                      missing[0]->name, static_cast<long long>(missing[0]->max), missing[1]->name,
                      static_cast<long long>(missing[1]->max))
            : errhint("Set %s (0-%lld) in postgresql.conf to a value no other node uses, then "
                      "reload.",
                      missing[0]->name, static_cast<long long>(missing[0]->max))));
  pg_unreachable();
}

}  // namespace snowflake::pg
