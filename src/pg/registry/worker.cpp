// The worker-identity registry: a table in any PostgreSQL database the nodes
// reach (snowflake.registry), in which each node leases its
// (datacenter_id, worker_id), so that two live nodes never issue IDs with the
// same identity. doc/registry.md is the operator's guide.
//
// Who does what. One background worker per node ("snowflake registry") talks
// to the registry through libpq, without blocking: every wait is on its latch
// with a deadline, so shutdown and reloads are never held up for long. It is
// the only writer of the shared View; backends only read it, and never talk to
// the registry themselves.
//
// Claims. One statement claims or renews a row: an upsert that succeeds only
// if the row is free, expired (registry clock), or this node's own: the same
// system identifier on a later timeline (a promoted standby; but also a
// point-in-time restore or a promoted copy, which cannot be told apart) or on
// the same timeline from the same host and data directory (the same holder:
// renewing, or restarted). A clone of a data directory (same system identifier
// and timeline, elsewhere) must wait for the lease to expire like any other
// node. Lease times are the registry's now(), so node clocks do not matter.
// The table is resolved once per connection through the connection's
// search_path and named with its schema in every statement.
//
// The rule that keeps two nodes apart. A node issues IDs only while its
// monotonic clock (CLOCK_BOOTTIME: it counts suspended time too) reads less than
//     valid_until = (that clock's time the last accepted renewal was sent)
//                   + lease - lease / 10
// The registry set that renewal's expires_at to (its now() when it processed
// the request, so after it was sent) + lease, and no other node can claim the
// row before expires_at has passed on the registry's clock. So the node stops
// at least lease / 10 before anyone else may start, as long as the two clocks
// run at the same rate; whether the registry is reachable in between does not
// matter. Renewals go out every lease / 3 and are retried every second (at
// most) after a failure; each request times out after lease / 4 (at most
// 10 s).
//
// The rule that keeps a takeover apart, even from a holder that still runs.
// Each claim and renewal reports ids_before (the later of the node's clock and
// its last ID, plus the lease, snowflake.max_lead and 1 ms; at least the floor
// below plus the same window); the registry keeps it in the row and returns
// it. The holder never returns an ID whose timestamp is at or above the
// ids_before of its last accepted claim or renewal: issue() checks it after
// reserving, with the lease (confirm_registered_node), so a forward clock
// step or a larger max_lead cannot pass it. Whenever the row passes to
// anyone but the same holder, the row's inherited_ids_before becomes the
// largest ids_before of the holders before (greatest(ids_before,
// inherited_ids_before)), and the new holder raises its generator's floor to
// it (Generator::raise_floor: the first ID there still makes a durable bound
// first) before it publishes the lease. So its IDs are above every ID the
// previous holder returned or can still return before it is fenced at its
// next renewal. When the floor is further ahead of the clock than max_lead,
// the new holder's IDs wait for its clock (explain_clock_behind says so): a
// promoted standby issues at once when its predecessor released its row (or
// its floor is past), and a restore or copy of a live node waits up to a lease
// unless max_lead >= the lease.
//
// Release. On a clean shutdown (SIGTERM) the worker publishes "released" (no
// backend returns another ID: each reads the View after its reservation, with
// a full barrier between), then reads last_id, and sets the row's ids_before
// to 1 ms above that ID's timestamp (bounded by kReleaseTimeoutMs). A standby
// promoted in a planned switchover then finds a floor already past. The lease
// is left to run, so a restart within it keeps the identity and other nodes
// (another system identifier, the same timeline) still wait for it.
//
// Shared memory protocol (SharedRegistry). The worker writes the View as a
// seqlock: it makes changecount odd, copies the View in, makes changecount even
// again, and broadcasts the condition variable. Readers copy the part they
// need between two reads of changecount and retry if it was odd or moved, so
// they take no lock. issue() reads the hot part (six words) this way twice per
// call, before and after its reservation; without a registry it reads none
// (issuing_node() in registry.hpp).
#include "registry.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "../../core/clock.hpp"
#include "../boundary.hpp"
#include "../node.hpp"
#include "../time.hpp"

extern "C" {
#include "libpq-fe.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/condition_variable.h"
}

namespace snowflake::pg {

bool registry_configured = false;

namespace {

constexpr char kTable[] = "snowflake_registry";
constexpr char kWorkerName[] = "snowflake registry";

constexpr int kSystemIdentifierSize = 24;
constexpr int kHostSize = 256;
constexpr int kErrorSize = 512;

// How long issue() waits for the worker's first answer for this identity
// (after the server starts, or a reload that changes the identity or the
// registry): a connection and two statements to a registry nearby.
constexpr int64_t kFirstClaimWaitMs = 2000;
// At shutdown, the release of the lease gets at most this long.
constexpr int kReleaseTimeoutMs = 1000;
// After a failed attempt, the worker tries again this soon (or lease / 3).
constexpr int64_t kRetryMs = 1000;
// How often a standby looks whether it has been promoted.
constexpr int64_t kRecoveryPollMs = 500;
// Automatic leasing: picks in a row lost to other nodes before giving up for now.
constexpr int kPickAttempts = 4;
// A claim that lost a race with another node's insert is tried again this soon.
constexpr int64_t kRaceRetryUs = 50 * 1000;
constexpr int kWorkerRestartSeconds = 5;

enum class State : int32 {
  kDisabled,      // no registry configured
  kStarting,      // no answer yet for the current identity settings
  kStandby,       // in recovery: nothing claimed
  kUnconfigured,  // worker_id set, datacenter_id not
  kHeld,          // leased; IDs may be issued while lease_clock_us() < valid_until_us
  kConflict,      // another live node holds the configured identity
  kUnreachable,   // no lease, and the last attempt failed
  kExhausted,     // automatic leasing found no free identity
  kReleased,      // shutting down: issues nothing, told the registry its last ID
};

// A registry row as the worker saw it.
struct Holder {
  char system_identifier[kSystemIdentifierSize];
  int64 timeline;
  char host[kHostSize];
  char data_directory[MAXPGPATH];
  TimestampTz claimed_at;
  TimestampTz renewed_at;
  TimestampTz expires_at;
};

struct View {
  // What issue() reads (copied up to `mine`).
  State state;
  int32 target_datacenter_id;  // the settings the worker acts on
  int32 target_worker_id;
  int64 node;            // leased or confirmed (kHeld), else -1
  int64 valid_until_us;  // on lease_clock_us() (kHeld)
  // (kHeld) The ids_before of the last accepted claim or renewal, as a
  // timestamp of the layout: every ID returned lies below it.
  int64 ids_before;
  // The rest, for errors and snowflake_registry_status().
  Holder mine;  // this node's row (kHeld); its identity also when contested
  int32 datacenter_id;
  int32 worker_id;
  int32 lease_ms;
  Holder other;  // kConflict
  // The floor inherited at the last takeover (a timestamp of the layout, 0 if
  // none) and the host of the node it was taken over from ("" if unknown).
  int64 floor;
  char floor_host[kHostSize];
  TimestampTz error_at;
  char error[kErrorSize];
};

constexpr size_t kHotSize = offsetof(View, mine);

struct SharedRegistry {
  pg_atomic_uint32 changecount;  // odd while the worker writes `view`
  ConditionVariable changed;     // broadcast after every write
  View view;
};

shmem_request_hook_type previous_request_hook = nullptr;
shmem_startup_hook_type previous_startup_hook = nullptr;
SharedRegistry* shared = nullptr;

// Seqlock read of the first `size` bytes of the View.
void read_view(View* out, size_t size) {
  for (;;) {
    const uint32 before = pg_atomic_read_u32(&shared->changecount);
    pg_read_barrier();
    memcpy(static_cast<void*>(out), &shared->view, size);
    pg_read_barrier();
    if ((before & 1) == 0 && pg_atomic_read_u32(&shared->changecount) == before) return;
    pg_spin_delay();
  }
}

// The worker's write (the only writer, so no lock).
void write_view(const View& view) {
  pg_atomic_fetch_add_u32(&shared->changecount, 1);  // a full barrier
  memcpy(&shared->view, &view, sizeof(View));
  pg_write_barrier();
  pg_atomic_fetch_add_u32(&shared->changecount, 1);
  ConditionVariableBroadcast(&shared->changed);
}

void reset_view(View* view, State state) {
  memset(static_cast<void*>(view), 0, sizeof(View));
  view->state = state;
  view->target_datacenter_id = settings.datacenter_id;
  view->target_worker_id = settings.worker_id;
  view->node = -1;
  view->datacenter_id = -1;
  view->worker_id = -1;
}

void request_hook() {
  if (previous_request_hook) previous_request_hook();
  RequestAddinShmemSpace(MAXALIGN(sizeof(SharedRegistry)));
}

void startup_hook() {
  if (previous_startup_hook) previous_startup_hook();
  LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
  bool found = false;
  shared = static_cast<SharedRegistry*>(
      ShmemInitStruct("snowflake registry", sizeof(SharedRegistry), &found));
  if (!found) {
    pg_atomic_init_u32(&shared->changecount, 0);
    ConditionVariableInit(&shared->changed);
    reset_view(&shared->view, registry_configured ? State::kStarting : State::kDisabled);
  }
  LWLockRelease(AddinShmemInitLock);
}

int64_t lease_us() {
  return int64_t{settings.registry_lease_ms} * 1000;
}
int64_t renew_interval_us() {
  return lease_us() / 3;
}
int64_t retry_us() {
  return std::min(kRetryMs * 1000, renew_interval_us());
}
// Set while the worker gives its lease back at shutdown.
bool releasing = false;

// For connecting and for each statement (also the registry's statement_timeout):
// a quarter of the lease, at most 10 s, so that a renewal sent a third into the
// lease has failed or succeeded long before the node must stop (0.9 of it).
int request_timeout_ms() {
  const int timeout_ms = std::min(settings.registry_lease_ms / 4, 10000);
  return releasing ? std::min(timeout_ms, kReleaseTimeoutMs) : timeout_ms;
}

// The clock of leases and waits: monotonic, and unlike CLOCK_MONOTONIC it
// keeps counting while the machine is suspended, so a node that wakes up after
// its lease has passed knows it.
int64_t lease_clock_us() {
  timespec now;
  clock_gettime(CLOCK_BOOTTIME, &now);
  return int64_t{now.tv_sec} * 1000000 + now.tv_nsec / 1000;
}

// Text from libpq or the registry that ends up in logs and errors: printable
// ASCII on one line (line breaks become spaces), no trailing space.
void copy_printable(char* target, size_t size, const char* source) {
  size_t length = 0;
  for (size_t i = 0; source != nullptr && source[i] != '\0' && length + 1 < size; i++) {
    const unsigned char c = static_cast<unsigned char>(source[i]);
    if (c == '\n' || c == '\r' || c == '\t') {
      if (length > 0 && target[length - 1] != ' ') target[length++] = ' ';
    } else {
      target[length++] = c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
    }
  }
  while (length > 0 && target[length - 1] == ' ') length--;
  target[length] = '\0';
}

// ---------------------------------------------------------------------------
// Backends: the hot path's slow half, and the errors.

const char* registry_time(TimestampTz t) {
  return t == 0 ? "(never)" : timestamp_text(t);
}

[[noreturn]] void refuse_conflict(const View& view) {
  const Holder& other = view.other;
  const bool same_system = strcmp(other.system_identifier, view.mine.system_identifier) == 0;
  ereport(ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("snowflake identity datacenter_id %d, worker_id %d is held by another node",
                  view.datacenter_id, view.worker_id),
           errdetail("The registry shows it held by %s (data directory %s, system identifier %s, "
                     "timeline %lld) since %s, its lease running until %s; this node has system "
                     "identifier %s, timeline %lld.",
                     other.host, other.data_directory, other.system_identifier,
                     static_cast<long long>(other.timeline), registry_time(other.claimed_at),
                     registry_time(other.expires_at), view.mine.system_identifier,
                     static_cast<long long>(view.mine.timeline)),
           same_system
               ? errhint("The other node has this node's system identifier on a later timeline: "
                         "a standby was promoted in this node's place. Stop this node, or rebuild "
                         "it as a standby of the new primary.")
               : errhint("Give one of the two nodes another snowflake.worker_id, or leave "
                         "snowflake.worker_id unset to lease a free identity. If the other node "
                         "is gone for good, this node takes the identity over once its lease "
                         "expires.")));
  pg_unreachable();
}

[[noreturn]] void refuse_expired(const View& view, int64_t now_us) {
  ereport(ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("snowflake identity lease for datacenter_id %d, worker_id %d has expired",
                  view.datacenter_id, view.worker_id),
           errdetail("The registry last renewed it at %s (registry clock). A node issues IDs only "
                     "until %d ms after it sent the last renewal the registry accepted (lease %d "
                     "ms less a tenth); that was %lld ms ago. Last registry error: %s",
                     registry_time(view.mine.renewed_at), view.lease_ms - view.lease_ms / 10,
                     view.lease_ms, static_cast<long long>((now_us - view.valid_until_us) / 1000),
                     view.error[0] != '\0' ? view.error : "none."),
           errhint("Make the registry in snowflake.registry reachable again: the node renews its "
                   "lease and issues IDs again at once.")));
  pg_unreachable();
}

// (Reads the whole View: callers have only its hot part.)
[[noreturn]] void refuse_ids_before(int64_t timestamp) {
  View view;
  read_view(&view, sizeof(View));
  const int64_t epoch_ms = settings.layout.epoch_ms();
  ereport(ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("snowflake IDs have reached the limit this node reported to the registry"),
           errdetail("The last renewal of datacenter_id %d, worker_id %d the registry accepted "
                     "promised IDs before %s; the next ID is of %s. A node that takes the "
                     "identity over starts at that limit, so this node issues no ID at or "
                     "above it.",
                     view.datacenter_id, view.worker_id,
                     timestamp_text(timestamptz_from_unix_ms(view.ids_before + epoch_ms)),
                     timestamp_text(timestamptz_from_unix_ms(timestamp + epoch_ms))),
           errhint("The clock jumped forward or snowflake.max_lead was raised since the last "
                   "renewal: the next renewal (within a third of snowflake.registry_lease) "
                   "raises the limit. Make sure the registry is reachable.")));
  pg_unreachable();
}

[[noreturn]] void refuse_released(const View& view) {
  ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                  errmsg("this node has released its snowflake identity"),
                  errdetail("The server is shutting down: the \"%s\" worker stopped issuing "
                            "under datacenter_id %d, worker_id %d and told the registry up to "
                            "where its IDs run.",
                            kWorkerName, view.datacenter_id, view.worker_id),
                  errhint("Issue IDs on the node that takes over, or after this one restarts.")));
  pg_unreachable();
}

[[noreturn]] void refuse_exhausted(const View& view) {
  const Layout& layout = settings.layout;
  if (view.target_datacenter_id >= 0 || layout.datacenter_bits() == 0) {
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("no free snowflake identity in the registry"),
             errdetail("Every worker_id from 0 to %lld of datacenter_id %d is leased by a live "
                       "node.",
                       static_cast<long long>(layout.max_worker_id()),
                       std::max(view.target_datacenter_id, 0)),
             errhint("Stop nodes that no longer need an identity (their leases expire after "
                     "snowflake.registry_lease), or set another snowflake.datacenter_id.")));
  }
  ereport(ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("no free snowflake identity in the registry"),
           errdetail("Every worker_id from 0 to %lld of every datacenter_id from 0 to %lld is "
                     "leased by a live node.",
                     static_cast<long long>(layout.max_worker_id()),
                     static_cast<long long>(layout.max_datacenter_id())),
           errhint("Stop nodes that no longer need an identity (their leases expire after "
                   "snowflake.registry_lease).")));
  pg_unreachable();
}

[[noreturn]] void refuse_unconfirmed(const View& view, bool waited) {
  const char* subject = view.target_worker_id >= 0 ? "the configured identity" : "an identity";
  if (view.state == State::kUnreachable) {
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("the snowflake registry has not confirmed this node's identity"),
             errdetail("With snowflake.registry set, IDs are issued only under an identity the "
                       "registry has leased to this node. The last attempt to claim %s, at %s, "
                       "failed: %s",
                       subject, registry_time(view.error_at), view.error),
             errhint("Check that the registry database is reachable with the connection string "
                     "in snowflake.registry; snowflake_registry_status() shows the worker's "
                     "progress.")));
  }
  ereport(ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("the snowflake registry has not confirmed this node's identity"),
           errdetail("With snowflake.registry set, IDs are issued only under an identity the "
                     "registry has leased to this node; the \"%s\" worker has not claimed %s "
                     "%s.",
                     kWorkerName, subject,
                     waited ? psprintf("within %lld ms", static_cast<long long>(kFirstClaimWaitMs))
                            : "yet"),
           errhint("Check that the \"%s\" background worker runs (the server log says why it "
                   "does not) and that the registry is reachable; snowflake_registry_status() "
                   "shows its progress.",
                   kWorkerName)));
  pg_unreachable();
}

// Whether the worker's View answers this backend's settings (both reload the
// same configuration, at slightly different moments).
bool view_is_current(const View& view) {
  return view.target_worker_id == settings.worker_id &&
         view.target_datacenter_id == settings.datacenter_id && view.state != State::kDisabled &&
         view.state != State::kStarting && view.state != State::kStandby;
}

}  // namespace

// Whether `view` lets this node issue now, with `wanted` (-1: any leased node).
bool view_allows(const View& view, int64_t now_us, int64_t wanted) {
  return view_is_current(view) && view.state == State::kHeld && now_us < view.valid_until_us &&
         (wanted < 0 || view.node == wanted);
}

int64_t registered_node() {
  const bool automatic = settings.worker_id < 0;
  const int64_t wanted = automatic ? -1 : configured_node();
  const int64_t give_up_us = lease_clock_us() + kFirstClaimWaitMs * 1000;
  bool sleeping = false;
  View view;
  for (;;) {
    read_view(&view, kHotSize);
    const int64_t now_us = lease_clock_us();
    const bool current = view_is_current(view);
    if (view_allows(view, now_us, wanted)) {
      if (sleeping) ConditionVariableCancelSleep();
      return view.node;
    }
    if (!current && now_us < give_up_us) {
      // The first call only prepares to sleep, so the View is read again first.
      const long timeout_ms = static_cast<long>(std::max<int64_t>(1, (give_up_us - now_us) / 1000));
      (void)ConditionVariableTimedSleep(&shared->changed, timeout_ms, PG_WAIT_EXTENSION);
      sleeping = true;
      continue;
    }
    if (sleeping) ConditionVariableCancelSleep();
    read_view(&view, sizeof(View));
    if (!view_is_current(view)) refuse_unconfirmed(view, true);
    switch (view.state) {
      case State::kHeld:
        refuse_expired(view, lease_clock_us());
      case State::kConflict:
        refuse_conflict(view);
      case State::kExhausted:
        refuse_exhausted(view);
      case State::kReleased:
        refuse_released(view);
      case State::kUnconfigured:
        (void)configured_node();
        break;
      default:
        break;
    }
    refuse_unconfirmed(view, false);
  }
}

void confirm_registered_node(int64_t node, int64_t timestamp) {
  // The reservation (a compare-and-swap on last_id) before the View: the
  // release at shutdown publishes the View first, then reads last_id.
  pg_memory_barrier();
  View view;
  read_view(&view, kHotSize);
  if (likely(view_allows(view, lease_clock_us(), node))) {
    if (likely(timestamp < view.ids_before)) return;
    refuse_ids_before(timestamp);
  }
  // Says why: the lease ran out, another node holds the identity, ...
  if (registered_node() != node) refuse_unconfirmed(view, false);
  read_view(&view, kHotSize);
  if (timestamp >= view.ids_before) refuse_ids_before(timestamp);
}

void explain_clock_behind(int64_t last_timestamp, int64_t clock) {
  View view;
  read_view(&view, sizeof(View));
  // Only while the generator has issued nothing at or above the floor.
  if (view.state != State::kHeld || view.floor <= 0 || last_timestamp >= view.floor ||
      view.floor - clock <= settings.max_lead_ms)
    return;
  const int64_t epoch_ms = settings.layout.epoch_ms();
  const int64_t from = view.floor - settings.max_lead_ms;
  ereport(ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("this node is taking snowflake identity datacenter_id %d, worker_id %d over "
                  "from %s, whose IDs may run up to %s",
                  view.datacenter_id, view.worker_id,
                  view.floor_host[0] != '\0' ? view.floor_host : "its previous holder",
                  timestamp_text(timestamptz_from_unix_ms(view.floor + epoch_ms))),
           errdetail("IDs are issued from %s, when this node's clock (now %s) is within "
                     "snowflake.max_lead (%d ms) of that time; that is %lld ms from now.",
                     timestamp_text(timestamptz_from_unix_ms(from + epoch_ms)),
                     timestamp_text(timestamptz_from_unix_ms(clock + epoch_ms)),
                     settings.max_lead_ms, static_cast<long long>(from - clock)),
           errhint("Wait until then, or set snowflake.max_lead >= snowflake.registry_lease "
                   "(plus the previous holder's snowflake.max_lead) so that a takeover issues "
                   "IDs at once, ahead of the clock.")));
}

// ---------------------------------------------------------------------------
// The settings' hooks.

bool check_registry(char** newval, void**, GucSource) {
  if (*newval == nullptr || (*newval)[0] == '\0') return true;
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(*newval, &error);
  if (options == nullptr) {
    char message[kErrorSize];
    copy_printable(message, sizeof(message), error != nullptr ? error : "out of memory");
    if (error != nullptr) PQfreemem(error);
    GUC_check_errdetail("snowflake.registry is not a valid libpq connection string: %s.", message);
    return false;
  }
  PQconninfoFree(options);
  return true;
}

void assign_registry(const char* newval, void*) {
  registry_configured = newval != nullptr && newval[0] != '\0';
}

void require_registry_at_start() {
  const char* raw = GetConfigOption("snowflake.registry", true, false);
  if (raw == nullptr || raw[0] == '\0') return;
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(raw, &error);
  if (options != nullptr) {
    PQconninfoFree(options);
    return;
  }
  char message[kErrorSize];
  copy_printable(message, sizeof(message), error != nullptr ? error : "out of memory");
  if (error != nullptr) PQfreemem(error);
  ereport(ERROR,
          (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
           errmsg("invalid value for parameter \"snowflake.registry\""),
           errdetail("It is not a valid libpq connection string: %s.", message),
           errhint("Write it as for psql, such as 'host=registry.example dbname=snowflake "
                   "user=snowflake_node', or remove the setting to run without a registry.")));
}

// ---------------------------------------------------------------------------
// The background worker: its libpq client, claims, and main loop.

namespace {

// This node, as the registry records it.
struct Self {
  char system_identifier[kSystemIdentifierSize];
  int64 timeline;
  char host[kHostSize];
  char data_directory[MAXPGPATH];
  char cluster_name[NAMEDATALEN];
};

struct Worker {
  PGconn* connection;
  char* connected_to;  // malloc'd copy of the snowflake.registry it connected with
  // The registry table as the connection resolved it, schema-qualified and
  // quoted: every statement names it so, whatever the search_path does later.
  char table[2 * NAMEDATALEN * 2 + 8];
  View view;
  int64_t next_attempt_us;
  State logged;         // the last state written to the server log
  int64 logged_node;    // and its identity
  bool logged_failure;  // a failure was logged since the last success
};

Worker worker;

void describe_self(Self* self) {
  snprintf(self->system_identifier, sizeof(self->system_identifier), UINT64_FORMAT,
           GetSystemIdentifier());
  self->timeline = GetWALInsertionTimeLine();
  char hostname[kHostSize];
  if (gethostname(hostname, sizeof(hostname)) != 0) strlcpy(hostname, "unknown", sizeof(hostname));
  hostname[sizeof(hostname) - 1] = '\0';
  char host[kHostSize];
  snprintf(host, sizeof(host), "%s:%d", hostname, PostPortNumber);
  copy_printable(self->host, sizeof(self->host), host);
  copy_printable(self->data_directory, sizeof(self->data_directory), DataDir);
  copy_printable(self->cluster_name, sizeof(self->cluster_name), cluster_name);
}

// libpq's message on one line, after `what`.
void set_error(char* error, const char* what, const char* message) {
  char line[kErrorSize];
  copy_printable(line, sizeof(line), message);
  snprintf(error, kErrorSize, "%s: %s", what, line);
}

void disconnect() {
  if (worker.connection != nullptr) PQfinish(worker.connection);
  worker.connection = nullptr;
  free(worker.connected_to);
  worker.connected_to = nullptr;
  worker.table[0] = '\0';
}

// `text` with each {table} replaced by the table the connection resolved
// (allocated in the current memory context).
const char* with_table(const char* text) {
  constexpr char kToken[] = "{table}";
  StringInfoData out;
  initStringInfo(&out);
  for (const char* p = text; *p != '\0';) {
    if (strncmp(p, kToken, sizeof(kToken) - 1) == 0) {
      appendStringInfoString(&out, worker.table);
      p += sizeof(kToken) - 1;
    } else {
      appendStringInfoChar(&out, *p++);
    }
  }
  return out.data;
}

// Waits until the connection's socket is ready for `events`; false (with the
// reason in `error`) at the deadline or when the server shuts down.
bool wait_for_socket(int events, int64_t deadline_us, char* error) {
  for (;;) {
    if (ShutdownRequestPending && !releasing) {
      snprintf(error, kErrorSize, "the server is shutting down");
      return false;
    }
    const pgsocket socket = PQsocket(worker.connection);
    if (socket == PGINVALID_SOCKET) {
      set_error(error, "lost the connection to the registry", PQerrorMessage(worker.connection));
      return false;
    }
    const int64_t left_us = deadline_us - lease_clock_us();
    if (left_us <= 0) {
      snprintf(error, kErrorSize, "the registry did not answer within %d ms", request_timeout_ms());
      return false;
    }
    const int ready =
        WaitLatchOrSocket(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH | events, socket,
                          static_cast<long>((left_us + 999) / 1000), PG_WAIT_EXTENSION);
    if (ready & WL_LATCH_SET) ResetLatch(MyLatch);
    if (ready & events) return true;
  }
}

// Runs one statement; the result (PGRES_TUPLES_OK or PGRES_COMMAND_OK) or
// nullptr with the reason in `error`, after which the caller disconnects.
PGresult* run(const char* sql, int count, const char* const* parameters, char* error) {
  PGconn* connection = worker.connection;
  const int64_t deadline_us = lease_clock_us() + int64_t{request_timeout_ms()} * 1000;
  if (!PQsendQueryParams(connection, sql, count, nullptr, parameters, nullptr, nullptr, 0)) {
    set_error(error, "could not send a statement to the registry", PQerrorMessage(connection));
    return nullptr;
  }
  for (;;) {
    const int flushed = PQflush(connection);
    if (flushed == 0) break;
    if (flushed < 0 || !wait_for_socket(WL_SOCKET_WRITEABLE, deadline_us, error)) {
      if (flushed < 0)
        set_error(error, "could not send to the registry", PQerrorMessage(connection));
      return nullptr;
    }
  }
  PGresult* result = nullptr;
  for (;;) {
    while (PQisBusy(connection)) {
      if (!wait_for_socket(WL_SOCKET_READABLE, deadline_us, error)) {
        PQclear(result);
        return nullptr;
      }
      if (!PQconsumeInput(connection)) {
        set_error(error, "lost the connection to the registry", PQerrorMessage(connection));
        PQclear(result);
        return nullptr;
      }
    }
    PGresult* next = PQgetResult(connection);
    if (next == nullptr) break;
    PQclear(result);
    result = next;
  }
  if (result == nullptr) {
    set_error(error, "the registry sent no result", PQerrorMessage(connection));
    return nullptr;
  }
  const ExecStatusType status = PQresultStatus(result);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    set_error(error, "the registry refused a statement", PQresultErrorMessage(result));
    PQclear(result);
    return nullptr;
  }
  return result;
}

// The registry table; doc/registry.md shows the same statement.
constexpr char kCreateTable[] =
    "CREATE TABLE IF NOT EXISTS {table} (\n"
    "    datacenter_id        integer     NOT NULL,\n"
    "    worker_id            integer     NOT NULL,\n"
    "    system_identifier    numeric(20) NOT NULL,\n"
    "    timeline             bigint      NOT NULL,\n"
    "    host                 text        NOT NULL,\n"
    "    data_directory       text        NOT NULL,\n"
    "    cluster_name         text        NOT NULL,\n"
    "    claimed_at           timestamptz NOT NULL,\n"
    "    renewed_at           timestamptz NOT NULL,\n"
    "    expires_at           timestamptz NOT NULL,\n"
    "    ids_before           timestamptz NOT NULL,\n"
    "    inherited_ids_before timestamptz,\n"
    "    PRIMARY KEY (datacenter_id, worker_id)\n"
    ")";

// Connects, bounds the registry's statement and lock waits, and resolves the
// table once: the first schema of the connection's search_path that has
// snowflake_registry (to_regclass), else it is created in the schema an
// unqualified CREATE TABLE would use (current_schema(), the first schema of
// the path that exists). A role without CREATE never gets that far if an
// administrator created it. Every later statement names the table with that
// schema.
bool connect_registry(char* error) {
  char timeout_seconds[16];
  snprintf(timeout_seconds, sizeof(timeout_seconds), "%d", (request_timeout_ms() + 999) / 1000);
  // The connection string comes after the defaults, so it may override them.
  const char* const keywords[] = {"fallback_application_name", "connect_timeout", "dbname",
                                  nullptr};
  const char* const values[] = {kWorkerName, timeout_seconds, settings.registry, nullptr};
  const int64_t deadline_us = lease_clock_us() + int64_t{request_timeout_ms()} * 1000;
  worker.connection = PQconnectStartParams(keywords, values, 1);
  if (worker.connection == nullptr) {
    snprintf(error, kErrorSize, "could not connect to the registry: out of memory");
    return false;
  }
  worker.connected_to = strdup(settings.registry);
  PostgresPollingStatusType status = PGRES_POLLING_WRITING;
  if (PQstatus(worker.connection) == CONNECTION_BAD) status = PGRES_POLLING_FAILED;
  while (status != PGRES_POLLING_OK) {
    if (status == PGRES_POLLING_FAILED) {
      set_error(error, "could not connect to the registry", PQerrorMessage(worker.connection));
      disconnect();
      return false;
    }
    const int events = status == PGRES_POLLING_READING ? WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE;
    if (!wait_for_socket(events, deadline_us, error)) {
      disconnect();
      return false;
    }
    status = PQconnectPoll(worker.connection);
  }
  if (PQsetnonblocking(worker.connection, 1) != 0) {
    set_error(error, "could not set up the registry connection", PQerrorMessage(worker.connection));
    disconnect();
    return false;
  }

  char timeout[32];
  snprintf(timeout, sizeof(timeout), "%dms", request_timeout_ms());
  const char* const parameters[] = {timeout, kTable};
  PGresult* result = run(
      "SELECT pg_catalog.set_config('statement_timeout', $1, false),\n"
      "    pg_catalog.set_config('lock_timeout', $1, false),\n"
      "    (SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname)\n"
      "       FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\n"
      "       WHERE c.oid = pg_catalog.to_regclass($2)),\n"
      "    pg_catalog.quote_ident(pg_catalog.current_schema()) || '.' || $2",
      2, parameters, error);
  if (result == nullptr) {
    disconnect();
    return false;
  }
  const bool exists = PQntuples(result) == 1 && !PQgetisnull(result, 0, 2);
  const bool creatable = PQntuples(result) == 1 && !PQgetisnull(result, 0, 3);
  if (exists || creatable)
    strlcpy(worker.table, PQgetvalue(result, 0, exists ? 2 : 3), sizeof(worker.table));
  PQclear(result);
  if (!exists && !creatable) {
    snprintf(error, kErrorSize,
             "the registry has no table %s in the search_path, and no schema in the search_path "
             "to create it in",
             kTable);
    disconnect();
    return false;
  }
  if (!exists) {
    result = run(with_table(kCreateTable), 0, nullptr, error);
    if (result == nullptr) {
      disconnect();
      return false;
    }
    PQclear(result);
  }
  return true;
}

// One statement claims or renews (datacenter_id, worker_id), or reports who
// holds it. The conditions are those in the file header. The same holder
// renewing (same system identifier, timeline, host and data directory) keeps
// the row's inherited_ids_before; every other claimant gets the largest
// ids_before of the holders before it. `previous` (the row as it was: the CTEs
// share one snapshot) names the node a takeover was taken from.
constexpr char kClaim[] =
    "WITH previous AS (\n"
    "  SELECT host, system_identifier = $3::numeric AND timeline = $4::bigint\n"
    "      AND host = $5::text AND data_directory = $6::text AS same_holder\n"
    "    FROM {table} WHERE datacenter_id = $1::integer AND worker_id = $2::integer),\n"
    "claim AS (\n"
    "  INSERT INTO {table} AS r (datacenter_id, worker_id, system_identifier,\n"
    "      timeline, host, data_directory, cluster_name, claimed_at, renewed_at, expires_at,\n"
    "      ids_before)\n"
    "  VALUES ($1::integer, $2::integer, $3::numeric, $4::bigint, $5::text, $6::text, $7::text,\n"
    "      now(), now(), now() + $8::integer * interval '1 millisecond',\n"
    "      timestamptz 'epoch' + $9::bigint * interval '1 millisecond')\n"
    "  ON CONFLICT (datacenter_id, worker_id) DO UPDATE SET\n"
    "    claimed_at = CASE WHEN r.expires_at >= now()\n"
    "                       AND r.system_identifier = excluded.system_identifier\n"
    "                       AND r.timeline = excluded.timeline\n"
    "                       AND r.host = excluded.host\n"
    "                       AND r.data_directory = excluded.data_directory\n"
    "                      THEN r.claimed_at ELSE now() END,\n"
    "    inherited_ids_before = CASE WHEN r.system_identifier = excluded.system_identifier\n"
    "                                 AND r.timeline = excluded.timeline\n"
    "                                 AND r.host = excluded.host\n"
    "                                 AND r.data_directory = excluded.data_directory\n"
    "                                THEN r.inherited_ids_before\n"
    "                                ELSE greatest(r.ids_before, r.inherited_ids_before) END,\n"
    "    system_identifier = excluded.system_identifier, timeline = excluded.timeline,\n"
    "    host = excluded.host, data_directory = excluded.data_directory,\n"
    "    cluster_name = excluded.cluster_name, renewed_at = now(),\n"
    "    expires_at = excluded.expires_at,\n"
    "    ids_before = greatest(excluded.ids_before,\n"
    "        CASE WHEN r.system_identifier = excluded.system_identifier\n"
    "              AND r.timeline = excluded.timeline\n"
    "              AND r.host = excluded.host\n"
    "              AND r.data_directory = excluded.data_directory\n"
    "             THEN r.inherited_ids_before\n"
    "             ELSE greatest(r.ids_before, r.inherited_ids_before) END\n"
    "          + $10::bigint * interval '1 millisecond')\n"
    "  WHERE r.expires_at < now()\n"
    "     OR (r.system_identifier = excluded.system_identifier\n"
    "         AND (r.timeline < excluded.timeline\n"
    "              OR (r.timeline = excluded.timeline AND r.host = excluded.host\n"
    "                  AND r.data_directory = excluded.data_directory)))\n"
    "  RETURNING *)\n"
    "SELECT claimed, system_identifier::text, timeline, host, data_directory,\n"
    "    CASE WHEN isfinite(claimed_at)\n"
    "      THEN (extract(epoch FROM claimed_at) * 1000000)::bigint END,\n"
    "    CASE WHEN isfinite(renewed_at)\n"
    "      THEN (extract(epoch FROM renewed_at) * 1000000)::bigint END,\n"
    "    CASE WHEN isfinite(expires_at)\n"
    "      THEN (extract(epoch FROM expires_at) * 1000000)::bigint END,\n"
    "    CASE WHEN claimed AND inherited_ids_before IS NOT NULL THEN floor(extract(epoch FROM\n"
    "      least(inherited_ids_before, timestamptz '100000-01-01')) * 1000)::bigint END,\n"
    "    CASE WHEN claimed THEN (SELECT host FROM previous WHERE NOT same_holder) END,\n"
    "    CASE WHEN claimed THEN floor(extract(epoch FROM\n"
    "      least(ids_before, timestamptz '100000-01-01')) * 1000)::bigint END\n"
    "  FROM (SELECT true AS claimed, * FROM claim\n"
    "        UNION ALL\n"
    "        SELECT false, * FROM {table}\n"
    "          WHERE datacenter_id = $1::integer AND worker_id = $2::integer\n"
    "            AND NOT EXISTS (SELECT FROM claim)) AS answer";

// At shutdown: the row promises only the IDs this node actually issued, so
// that a standby promoted in a planned switchover starts at once. The lease
// itself runs on: the node gets its identity back if it restarts within it.
constexpr char kRelease[] =
    "UPDATE {table}\n"
    "  SET ids_before = timestamptz 'epoch' + $7::bigint * interval '1 millisecond'\n"
    "  WHERE datacenter_id = $1::integer AND worker_id = $2::integer\n"
    "    AND system_identifier = $3::numeric AND timeline = $4::bigint\n"
    "    AND host = $5::text AND data_directory = $6::text";

// A registry time sent as microseconds since 1970; NULL stands for infinity
// (a row an administrator reserved for good).
TimestampTz registry_timestamp(const PGresult* result, int column) {
  if (PQgetisnull(result, 0, column)) return DT_NOEND;
  return strtoll(PQgetvalue(result, 0, column), nullptr, 10) - kPostgresEpochUnixMs * 1000;
}

enum class Claim { kClaimed, kTaken, kRace, kFailed };

struct ClaimResult {
  Holder row;
  int64_t inherited_ms;        // -1 if none
  int64_t sent_us;             // lease_clock_us() when the statement was sent
  int64_t ids_before_ms;       // the row's ids_before once claimed (ms since 1970)
  char taken_from[kHostSize];  // a takeover: the previous holder's host, else ""
};

// Above every ID this node may issue under a lease of lease_ms from now.
int64_t ids_before_ms() {
  int64_t latest = unix_time_ms();
  if (Generator* generator = node_generator(); generator != nullptr) {
    const int64_t last = generator->state().last_id.load();
    latest = std::max(latest, settings.layout.timestamp_of(last) + settings.layout.epoch_ms());
  }
  return latest + settings.registry_lease_ms + settings.max_lead_ms + 1;
}

Claim claim(const Self& self, int datacenter_id, int worker_id, ClaimResult* out, char* error) {
  char datacenter[16], work[16], timeline[24], lease[16], ids_before[24], window[24];
  snprintf(datacenter, sizeof(datacenter), "%d", datacenter_id);
  snprintf(work, sizeof(work), "%d", worker_id);
  snprintf(timeline, sizeof(timeline), "%lld", static_cast<long long>(self.timeline));
  snprintf(lease, sizeof(lease), "%d", settings.registry_lease_ms);
  snprintf(ids_before, sizeof(ids_before), "%lld", static_cast<long long>(ids_before_ms()));
  snprintf(window, sizeof(window), "%lld",
           static_cast<long long>(int64_t{settings.registry_lease_ms} + settings.max_lead_ms + 1));
  const char* const parameters[] = {datacenter,
                                    work,
                                    self.system_identifier,
                                    timeline,
                                    self.host,
                                    self.data_directory,
                                    self.cluster_name,
                                    lease,
                                    ids_before,
                                    window};
  out->sent_us = lease_clock_us();
  PGresult* result = run(with_table(kClaim), 10, parameters, error);
  if (result == nullptr) return Claim::kFailed;
  if (PQntuples(result) != 1) {
    PQclear(result);
    return Claim::kRace;  // a row inserted meanwhile by another node
  }
  Holder& row = out->row;
  copy_printable(row.system_identifier, sizeof(row.system_identifier), PQgetvalue(result, 0, 1));
  row.timeline = strtoll(PQgetvalue(result, 0, 2), nullptr, 10);
  copy_printable(row.host, sizeof(row.host), PQgetvalue(result, 0, 3));
  copy_printable(row.data_directory, sizeof(row.data_directory), PQgetvalue(result, 0, 4));
  row.claimed_at = registry_timestamp(result, 5);
  row.renewed_at = registry_timestamp(result, 6);
  row.expires_at = registry_timestamp(result, 7);
  out->inherited_ms =
      PQgetisnull(result, 0, 8) ? -1 : strtoll(PQgetvalue(result, 0, 8), nullptr, 10);
  copy_printable(out->taken_from, sizeof(out->taken_from),
                 PQgetisnull(result, 0, 9) ? "" : PQgetvalue(result, 0, 9));
  out->ids_before_ms =
      PQgetisnull(result, 0, 10) ? -1 : strtoll(PQgetvalue(result, 0, 10), nullptr, 10);
  const bool claimed = strcmp(PQgetvalue(result, 0, 0), "t") == 0;
  PQclear(result);
  return claimed ? Claim::kClaimed : Claim::kTaken;
}

bool is_mine(const Self& self, const char* system_identifier, int64 timeline, const char* host,
             const char* data_directory) {
  if (strcmp(system_identifier, self.system_identifier) != 0) return false;
  if (timeline != self.timeline) return timeline < self.timeline;
  return strcmp(host, self.host) == 0 && strcmp(data_directory, self.data_directory) == 0;
}

// Automatic leasing: the identity to try next. A row this node already holds
// (or held, if no one took it since) comes first, so a restart within the
// lease gets the same identity back; else the lowest free one. false with
// *found = false when every identity is leased.
bool pick(const Self& self, int* datacenter_id, int* worker_id, bool* found, char* error) {
  const Layout& layout = settings.layout;
  const bool one_datacenter = settings.datacenter_id >= 0 || layout.datacenter_bits() == 0;
  const int first_datacenter = one_datacenter ? std::max(settings.datacenter_id, 0) : 0;
  const int last_datacenter =
      one_datacenter ? first_datacenter : static_cast<int>(layout.max_datacenter_id());
  const int last_worker = static_cast<int>(layout.max_worker_id());
  char low[16], high[16], workers[16];
  snprintf(low, sizeof(low), "%d", first_datacenter);
  snprintf(high, sizeof(high), "%d", last_datacenter);
  snprintf(workers, sizeof(workers), "%d", last_worker);
  const char* const parameters[] = {low, high, workers};
  PGresult* result =
      run(with_table("SELECT datacenter_id, worker_id, system_identifier::text, timeline, host, "
                     "data_directory,\n"
                     "    expires_at >= now()\n"
                     "  FROM {table}\n"
                     "  WHERE datacenter_id BETWEEN $1::integer AND $2::integer\n"
                     "    AND worker_id BETWEEN 0 AND $3::integer\n"
                     "  ORDER BY datacenter_id, worker_id"),
          3, parameters, error);
  if (result == nullptr) return false;

  const int rows = PQntuples(result);
  int mine = -1;
  for (int i = 0; i < rows; i++) {
    if (!is_mine(self, PQgetvalue(result, i, 2), strtoll(PQgetvalue(result, i, 3), nullptr, 10),
                 PQgetvalue(result, i, 4), PQgetvalue(result, i, 5)))
      continue;
    const bool live = strcmp(PQgetvalue(result, i, 6), "t") == 0;
    if (mine < 0 || live) mine = i;
    if (live) break;
  }
  *found = true;
  if (mine >= 0) {
    *datacenter_id = atoi(PQgetvalue(result, mine, 0));
    *worker_id = atoi(PQgetvalue(result, mine, 1));
    PQclear(result);
    return true;
  }
  // Live rows come in (datacenter_id, worker_id) order: walk to the first gap.
  int datacenter = first_datacenter;
  int work = 0;
  for (int i = 0; i < rows && datacenter <= last_datacenter; i++) {
    if (strcmp(PQgetvalue(result, i, 6), "t") != 0) continue;
    const int row_datacenter = atoi(PQgetvalue(result, i, 0));
    const int row_worker = atoi(PQgetvalue(result, i, 1));
    if (row_datacenter != datacenter || row_worker != work) {
      if (row_datacenter > datacenter || (row_datacenter == datacenter && row_worker > work)) break;
      continue;
    }
    if (++work > last_worker) {
      work = 0;
      datacenter++;
    }
  }
  PQclear(result);
  *found = datacenter <= last_datacenter;
  *datacenter_id = datacenter;
  *worker_id = work;
  return *found;
}

// A new holder starts above its predecessors: its generator's floor goes up
// to the largest ids_before they reported (nothing is made durable: the first
// ID there raises a durable bound first). Renewals return the same floor,
// which then changes nothing.
void apply_inherited(const ClaimResult& result) {
  Generator* generator = node_generator();
  const Layout& layout = settings.layout;
  View& view = worker.view;
  if (result.taken_from[0] != '\0') {
    view.floor = 0;
    strlcpy(view.floor_host, result.taken_from, sizeof(view.floor_host));
  }
  const int64_t timestamp = result.inherited_ms - layout.epoch_ms();
  if (generator == nullptr || result.inherited_ms < 0 || timestamp <= 0) return;
  const int64_t last = generator->state().last_id.load();
  const bool raises = last < layout.max_id(timestamp - 1);
  generator->raise_floor(timestamp);
  if (timestamp > view.floor) view.floor = timestamp;
  if (raises && result.inherited_ms > unix_time_ms()) {
    ereport(LOG,
            (errmsg("snowflake registry: continuing above the previous holder's IDs, which run "
                    "up to %s",
                    timestamp_text(timestamptz_from_unix_ms(result.inherited_ms))),
             errdetail("The previous holder of the identity (%s) may have issued IDs up to that "
                       "time; this node's clock is behind it by %lld ms, snowflake.max_lead is "
                       "%d ms.",
                       view.floor_host[0] != '\0' ? view.floor_host : "unknown",
                       static_cast<long long>(result.inherited_ms - unix_time_ms()),
                       settings.max_lead_ms)));
  }
}

void log_state() {
  const View& view = worker.view;
  if (view.state == worker.logged && view.node == worker.logged_node) return;
  worker.logged = view.state;
  worker.logged_node = view.node;
  switch (view.state) {
    case State::kHeld:
      ereport(LOG, (errmsg("snowflake registry: holding datacenter_id %d, worker_id %d",
                           view.datacenter_id, view.worker_id),
                    errdetail("Lease of %d ms, claimed at %s (registry clock).", view.lease_ms,
                              registry_time(view.mine.claimed_at))));
      break;
    case State::kConflict:
      ereport(LOG, (errmsg("snowflake registry: datacenter_id %d, worker_id %d is held by %s "
                           "(data directory %s, system identifier %s) since %s",
                           view.datacenter_id, view.worker_id, view.other.host,
                           view.other.data_directory, view.other.system_identifier,
                           registry_time(view.other.claimed_at))));
      break;
    case State::kExhausted:
      ereport(LOG, (errmsg("snowflake registry: no free identity")));
      break;
    default:
      break;
  }
}

void publish() {
  write_view(worker.view);
  log_state();
}

void record_failure(const char* error) {
  if (ShutdownRequestPending) return;
  View& view = worker.view;
  view.error_at = GetCurrentTimestamp();
  strlcpy(view.error, error, sizeof(view.error));
  if (view.state != State::kHeld) {
    view.state = State::kUnreachable;
    view.node = -1;
    view.valid_until_us = 0;
  }
  if (!worker.logged_failure) {
    ereport(LOG, (errmsg("snowflake registry: %s", error),
                  view.state == State::kHeld
                      ? errdetail(
                            "The lease stays valid for %lld ms more.",
                            static_cast<long long>((view.valid_until_us - lease_clock_us()) / 1000))
                      : 0));
    worker.logged_failure = true;
  }
  worker.next_attempt_us = lease_clock_us() + retry_us();
}

void record_claim(const Self& self, int datacenter_id, int worker_id, const ClaimResult& result) {
  View& view = worker.view;
  if (view.state != State::kHeld || view.datacenter_id != datacenter_id ||
      view.worker_id != worker_id) {
    view.floor = 0;
    view.floor_host[0] = '\0';
  }
  apply_inherited(result);
  view.state = State::kHeld;
  view.datacenter_id = datacenter_id;
  view.worker_id = worker_id;
  view.node = settings.layout.node(datacenter_id, worker_id);
  view.lease_ms = settings.registry_lease_ms;
  view.valid_until_us = result.sent_us + lease_us() - lease_us() / 10;
  view.ids_before = result.ids_before_ms - settings.layout.epoch_ms();
  view.mine = result.row;
  strlcpy(view.mine.system_identifier, self.system_identifier, sizeof(view.mine.system_identifier));
  view.error[0] = '\0';
  view.error_at = 0;
  if (worker.logged_failure) {
    ereport(LOG, (errmsg("snowflake registry: reached the registry again")));
    worker.logged_failure = false;
  }
  worker.next_attempt_us = result.sent_us + renew_interval_us();
}

void record_conflict(const Self& self, int datacenter_id, int worker_id,
                     const ClaimResult& result) {
  View& view = worker.view;
  view.state = State::kConflict;
  view.datacenter_id = datacenter_id;
  view.worker_id = worker_id;
  view.node = -1;
  view.valid_until_us = 0;
  view.other = result.row;
  strlcpy(view.mine.system_identifier, self.system_identifier, sizeof(view.mine.system_identifier));
  view.mine.timeline = self.timeline;
  worker.next_attempt_us = lease_clock_us() + retry_us();
}

// One round with the registry: claim or renew, and publish the outcome.
void attempt() {
  char error[kErrorSize];
  Self self;
  describe_self(&self);
  if (worker.connection == nullptr && !connect_registry(error)) {
    record_failure(error);
    publish();
    return;
  }
  ClaimResult result;
  if (settings.worker_id >= 0) {
    const int datacenter_id = std::max(settings.datacenter_id, 0);
    switch (claim(self, datacenter_id, settings.worker_id, &result, error)) {
      case Claim::kClaimed:
        record_claim(self, datacenter_id, settings.worker_id, result);
        break;
      case Claim::kTaken:
        record_conflict(self, datacenter_id, settings.worker_id, result);
        break;
      case Claim::kRace:
        worker.next_attempt_us = lease_clock_us() + kRaceRetryUs;
        return;
      case Claim::kFailed:
        disconnect();
        record_failure(error);
        break;
    }
    publish();
    return;
  }

  // Automatic: renew what is held, else pick and claim, a few times if other
  // nodes win the picks.
  int datacenter_id = worker.view.datacenter_id;
  int worker_id = worker.view.worker_id;
  bool have = worker.view.state == State::kHeld;
  for (int round = 0; round < kPickAttempts; round++) {
    if (!have) {
      bool found = false;
      if (!pick(self, &datacenter_id, &worker_id, &found, error)) {
        if (found) {
          disconnect();
          record_failure(error);
        } else {
          worker.view.state = State::kExhausted;
          worker.view.node = -1;
          worker.view.valid_until_us = 0;
          worker.next_attempt_us = lease_clock_us() + retry_us();
        }
        publish();
        return;
      }
    }
    have = false;
    switch (claim(self, datacenter_id, worker_id, &result, error)) {
      case Claim::kClaimed:
        record_claim(self, datacenter_id, worker_id, result);
        publish();
        return;
      case Claim::kTaken:
      case Claim::kRace:
        // Stop using a leased identity that someone else now holds at once.
        if (worker.view.state == State::kHeld && worker.view.datacenter_id == datacenter_id &&
            worker.view.worker_id == worker_id) {
          worker.view.state = State::kStarting;
          worker.view.node = -1;
          worker.view.valid_until_us = 0;
          publish();
        }
        continue;
      case Claim::kFailed:
        disconnect();
        record_failure(error);
        publish();
        return;
    }
  }
  snprintf(error, sizeof(error), "other nodes took %d free identities in a row first",
           kPickAttempts);
  record_failure(error);
  publish();
}

// The identity settings changed (or the worker started): forget what was
// claimed for the old ones. Its lease simply expires in the registry.
void retarget() {
  View& view = worker.view;
  if (view.target_datacenter_id == settings.datacenter_id &&
      view.target_worker_id == settings.worker_id)
    return;
  reset_view(&view, registry_configured ? State::kStarting : State::kDisabled);
  worker.next_attempt_us = 0;
  publish();
}

void set_state(State state) {
  if (worker.view.state == state) return;
  reset_view(&worker.view, state);
  worker.next_attempt_us = 0;
  publish();
}

// Clean shutdown: lower the row's ids_before to what this node issued, so
// that a standby promoted in a planned switchover takes over with a floor
// already past. First the View says "released", so no backend returns another
// ID (each checks the View after its reservation); then last_id bounds every
// ID returned, and the row's ids_before goes to 1 ms above it. The lease is
// not ended: a restart within it keeps the identity (automatic leasing), and
// other nodes than a promoted standby still wait for it. Bounded by
// kReleaseTimeoutMs; on failure the row keeps the ids_before it had.
void release() {
  View& view = worker.view;
  if (view.state != State::kHeld || !registry_configured) return;
  const int datacenter_id = view.datacenter_id;
  const int worker_id = view.worker_id;
  view.state = State::kReleased;
  view.node = -1;
  view.valid_until_us = 0;
  publish();
  pg_memory_barrier();
  Generator* generator = node_generator();
  if (generator == nullptr) return;
  const Layout& layout = settings.layout;
  const int64_t last = generator->state().last_id.load();
  const int64_t ids_before = layout.timestamp_of(last) + layout.epoch_ms() + 1;

  releasing = true;
  char error[kErrorSize];
  if (worker.connection == nullptr && !connect_registry(error)) {
    ereport(LOG, (errmsg("snowflake registry: could not release datacenter_id %d, worker_id %d: %s",
                         datacenter_id, worker_id, error),
                  errdetail("The row keeps the ids_before of its last renewal.")));
    return;
  }
  Self self;
  describe_self(&self);
  char datacenter[16], work[16], timeline[24], before[24];
  snprintf(datacenter, sizeof(datacenter), "%d", datacenter_id);
  snprintf(work, sizeof(work), "%d", worker_id);
  snprintf(timeline, sizeof(timeline), "%lld", static_cast<long long>(self.timeline));
  snprintf(before, sizeof(before), "%lld", static_cast<long long>(ids_before));
  const char* const parameters[] = {
      datacenter, work, self.system_identifier, timeline, self.host, self.data_directory, before};
  PGresult* result = run(with_table(kRelease), 7, parameters, error);
  if (result == nullptr) {
    ereport(LOG, (errmsg("snowflake registry: could not release datacenter_id %d, worker_id %d: %s",
                         datacenter_id, worker_id, error),
                  errdetail("The row keeps the ids_before of its last renewal.")));
    return;
  }
  const bool released = strcmp(PQcmdTuples(result), "1") == 0;
  PQclear(result);
  if (released) {
    ereport(LOG, (errmsg("snowflake registry: released datacenter_id %d, worker_id %d",
                         datacenter_id, worker_id),
                  errdetail("The registry row now says this node's IDs run up to %s; a standby "
                            "promoted in its place issues at once. The lease runs on.",
                            timestamp_text(timestamptz_from_unix_ms(ids_before)))));
  }
}

void reload() {
  ConfigReloadPending = false;
  const int lease_ms = settings.registry_lease_ms;
  ProcessConfigFile(PGC_SIGHUP);
  if (worker.connected_to != nullptr && strcmp(worker.connected_to, settings.registry) != 0) {
    disconnect();
    worker.next_attempt_us = 0;
  }
  if (lease_ms != settings.registry_lease_ms) worker.next_attempt_us = 0;
  retarget();
}

}  // namespace

}  // namespace snowflake::pg

using namespace snowflake;
using namespace snowflake::pg;

extern "C" PGDLLEXPORT void snowflake_registry_main(Datum);

void snowflake_registry_main(Datum) {
  pqsignal(SIGHUP, SignalHandlerForConfigReload);
  pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
  BackgroundWorkerUnblockSignals();
  // No database: this only makes the worker a backend that pg_stat_activity shows.
  BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);

  // The View survives a restart of this worker: a lease held stays held.
  read_view(&worker.view, sizeof(View));
  worker.logged = worker.view.state;
  worker.logged_node = worker.view.node;
  retarget();

  // Log messages and errors allocate; each round starts from an empty context.
  MemoryContext round_context =
      AllocSetContextCreate(TopMemoryContext, "snowflake registry round", ALLOCSET_SMALL_SIZES);
  MemoryContextSwitchTo(round_context);

  while (!ShutdownRequestPending) {
    MemoryContextReset(round_context);
    if (ConfigReloadPending) reload();
    long timeout_ms = -1;
    if (!registry_configured) {
      disconnect();
      set_state(State::kDisabled);
    } else if (RecoveryInProgress()) {
      disconnect();
      set_state(State::kStandby);
      timeout_ms = kRecoveryPollMs;
    } else if (settings.worker_id >= 0 && settings.node < 0) {
      set_state(State::kUnconfigured);
    } else {
      const State state = worker.view.state;
      if (state == State::kDisabled || state == State::kStandby || state == State::kUnconfigured ||
          state == State::kReleased)
        set_state(State::kStarting);
      if (lease_clock_us() >= worker.next_attempt_us) attempt();
      timeout_ms = static_cast<long>(
          std::max<int64_t>(0, (worker.next_attempt_us - lease_clock_us() + 999) / 1000));
    }
    if (ShutdownRequestPending) break;
    (void)WaitLatch(MyLatch,
                    WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | (timeout_ms >= 0 ? WL_TIMEOUT : 0),
                    timeout_ms, PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
  }
  release();
  disconnect();
  // Exit code 1: restarted if terminated alone; the postmaster is shutting down otherwise.
  proc_exit(1);
}

namespace snowflake::pg {

void request_registry_memory() {
  previous_request_hook = shmem_request_hook;
  shmem_request_hook = request_hook;
  previous_startup_hook = shmem_startup_hook;
  shmem_startup_hook = startup_hook;
}

void register_registry_worker() {
  BackgroundWorker registration;
  memset(&registration, 0, sizeof(registration));
  registration.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
  // Also on a standby, where it waits for the promotion.
  registration.bgw_start_time = BgWorkerStart_ConsistentState;
  registration.bgw_restart_time = kWorkerRestartSeconds;
  strlcpy(registration.bgw_library_name, "snowflake", BGW_MAXLEN);
  strlcpy(registration.bgw_function_name, "snowflake_registry_main", BGW_MAXLEN);
  strlcpy(registration.bgw_name, kWorkerName, BGW_MAXLEN);
  strlcpy(registration.bgw_type, kWorkerName, BGW_MAXLEN);
  RegisterBackgroundWorker(&registration);
}

}  // namespace snowflake::pg

// ---------------------------------------------------------------------------
// snowflake_registry_status(): one row for operators and tests.

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
  TupleDesc descriptor;
  if (get_call_result_type(fcinfo, nullptr, &descriptor) != TYPEFUNC_COMPOSITE)
    elog(ERROR, "snowflake_registry_status: return type must be a row type");
  constexpr int kColumns = 18;
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
  PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(descriptor), values, nulls)));
}
