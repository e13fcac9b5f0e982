// The backends' side of the registry: whether this node may issue IDs now,
// read from the View (view.cpp) twice per issue(), before and after its
// reservation, and the errors that say why not. The rules these checks enforce
// are stated where the values they compare are made: valid_until in
// src/core/registry_round.hpp ("The rule that keeps two nodes apart"),
// ids_before and the floor in claim.cpp ("The rule that keeps a takeover
// apart").
#include <algorithm>

#include "../../core/clock.hpp"
#include "../../core/lease.hpp"
#include "../node.hpp"
#include "../settings.hpp"
#include "../time.hpp"
#include "registry.hpp"
#include "view.hpp"

namespace snowflake::pg {

using namespace registry;

namespace {

// How long issue() waits for the worker's first answer for this identity
// (after the server starts, or a reload that changes the identity or the
// registry): a connection and two statements to a registry nearby.
constexpr int64_t kFirstClaimWaitMs = 2000;

[[noreturn]] void refuse_conflict(const View& view) {
  const Holder& other = view.other;
  const Holder& mine = view.mine;
  const bool same_system = strcmp(other.system_identifier, mine.system_identifier) == 0;
  const bool same_place = same_system && other.timeline == mine.timeline &&
                          strcmp(other.host, mine.host) == 0 &&
                          strcmp(other.data_directory, mine.data_directory) == 0;
  // The holder's lease, as its row says (an administrator's reserved row has none).
  const int64_t holder_lease_ms =
      TIMESTAMP_NOT_FINITE(other.expires_at) || TIMESTAMP_NOT_FINITE(other.renewed_at)
          ? settings.registry_lease_ms
          : (other.expires_at - other.renewed_at) / 1000;
  ereport(
      ERROR,
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
       same_place ? errhint("Another running server started from this data directory holds it: the "
                            "same system identifier, timeline, host, port and data directory, but "
                            "another postmaster (a clone of this machine or volume, or a copy "
                            "started under the same names). Stop one of the two. If the other is "
                            "gone without a clean shutdown, this node takes the identity over once "
                            "its row has not been renewed for two thirds of its lease.")
       : same_system && other.timeline > mine.timeline
           ? errhint("The node at %s (data directory %s) has this node's system identifier on a "
                     "later timeline: either a standby promoted in this node's place (then this "
                     "node is the old primary: stop it, or rebuild it as a standby of the new "
                     "primary), or a restored backup or copy of this node started with its "
                     "configuration (then stop that one, or give it another snowflake.worker_id "
                     "or snowflake.registry). Once the node at %s stops, this node takes the "
                     "identity back when its lease runs out, at most %lld ms after its last "
                     "renewal, and issues above its IDs.",
                     other.host, other.data_directory, other.host,
                     static_cast<long long>(holder_lease_ms))
       : same_system && other.timeline < mine.timeline
           ? errhint("This node continues the timeline of the node that holds it, which still "
                     "renews its lease: this node is a restored backup or a copy of a running "
                     "node (or a standby promoted while its primary runs). Point its "
                     "snowflake.registry elsewhere or give it another snowflake.worker_id; if "
                     "the other node is gone, this node takes the identity over once its row "
                     "has not been renewed for two thirds of its lease.")
           : errhint("Give one of the two nodes another snowflake.worker_id, or leave "
                     "snowflake.worker_id unset to lease a free identity. If the other node "
                     "is gone for good, this node takes the identity over once its lease "
                     "expires.")));
  pg_unreachable();
}

// Whether the worker found its claims and renewals waiting for the registry's
// synchronous standbys (stall.cpp).
bool stalled_on_standbys(const View& view) {
  return strncmp(view.registry.waits_for, "synchronous standbys", kWaitSize) == 0;
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
           stalled_on_standbys(view)
               ? errhint("The registry waits for its synchronous standbys to confirm the renewals "
                         "(since %s): start a standby that its synchronous_standby_names names. "
                         "The node issues IDs again once a renewal is confirmed; it retries every "
                         "second.",
                         registry_time(view.registry.waiting_since))
               : errhint("Make the registry in snowflake.registry reachable again: the node "
                         "renews its lease and issues IDs again within a second of the "
                         "registry's answer (a registry with synchronous standbys answers once "
                         "one of them streams).")));
  pg_unreachable();
}

// (Reads the whole View: callers have only its hot part.)
[[noreturn]] void refuse_ids_before(int64_t timestamp) {
  View view;
  read_view(&view, sizeof(View));
  const Layout& layout = settings.layout;
  ereport(ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("snowflake IDs have reached the limit this node reported to the registry"),
           errdetail("The last renewal of datacenter_id %d, worker_id %d the registry accepted "
                     "promised IDs before %s; the next ID is of %s. A node that takes the "
                     "identity over starts at that limit, so this node issues no ID at or "
                     "above it.",
                     view.datacenter_id, view.worker_id,
                     timestamp_text(timestamptz_from_unix_ms(layout.unix_ms(view.ids_before))),
                     timestamp_text(timestamptz_from_unix_ms(layout.unix_ms(timestamp)))),
           errhint("The clock jumped forward or snowflake.max_lead was raised since the last "
                   "renewal: the next renewal (within a third of snowflake.registry_lease) "
                   "raises the limit. Make sure the registry is reachable.")));
  pg_unreachable();
}

[[noreturn]] void refuse_below_floor(int64_t timestamp) {
  View view;
  read_view(&view, sizeof(View));
  const Layout& layout = settings.layout;
  ereport(ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("snowflake IDs reserved before this node took its identity back were not "
                  "returned"),
           errdetail("The IDs are of %s; since they were reserved, the lease of datacenter_id "
                     "%d, worker_id %d lapsed, %s held it, and this node claimed it again with "
                     "IDs from %s on. The other node may have issued these IDs.",
                     timestamp_text(timestamptz_from_unix_ms(layout.unix_ms(timestamp))),
                     view.datacenter_id, view.worker_id,
                     view.floor_host[0] != '\0' ? view.floor_host : "another node",
                     timestamp_text(timestamptz_from_unix_ms(layout.unix_ms(view.floor)))),
           errhint("Try again: the next IDs lie above the floor.")));
  pg_unreachable();
}

[[noreturn]] void refuse_in_gap(int64_t timestamp) {
  View view;
  read_view(&view, sizeof(View));
  const Layout& layout = settings.layout;
  ereport(ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("snowflake IDs reserved before the registry's changed history was seen were "
                  "not returned"),
           errdetail("The IDs are of %s. The registry's history changed at %s while this node "
                     "held datacenter_id %d, worker_id %d: a node that took the identity over in "
                     "the history the registry forgot may have issued IDs from %s (this node's "
                     "limit then) up to %s, so this node issues none there.",
                     timestamp_text(timestamptz_from_unix_ms(layout.unix_ms(timestamp))),
                     registry_time(view.registry.history_changed_at), view.datacenter_id,
                     view.worker_id,
                     timestamp_text(timestamptz_from_unix_ms(layout.unix_ms(view.gap_from))),
                     timestamp_text(timestamptz_from_unix_ms(layout.unix_ms(view.gap_until)))),
           errhint("Try again: the next IDs lie at or above %s.",
                   timestamp_text(timestamptz_from_unix_ms(layout.unix_ms(view.gap_until))))));
  pg_unreachable();
}

// After a change of the registry's history seen while this node holds its
// lease: once its IDs may reach the gap above its old cap, the generator
// continues at the gap's end (lease::must_cross_gap; history.cpp).
void cross_gap(const View& view) {
  Generator* generator = node_generator();
  if (generator == nullptr) return;
  const Layout& layout = settings.layout;
  const int64_t last = layout.timestamp_of(generator->state().last_id.load());
  const int64_t reach = layout.timestamp_from_unix_ms(unix_time_ms() + settings.max_lead_ms) + 1;
  if (lease::must_cross_gap(grant_of(view, true), last, reach))
    generator->raise_floor(view.gap_until);
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
             stalled_on_standbys(view)
                 ? errhint("The registry waits for its synchronous standbys to confirm the claim "
                           "(since %s): start a standby that its synchronous_standby_names "
                           "names; snowflake_registry_status() shows the worker's progress.",
                           registry_time(view.registry.waiting_since))
                 : errhint("Check that the registry database is reachable with the connection "
                           "string in snowflake.registry; snowflake_registry_status() shows the "
                           "worker's progress.")));
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

// Whether `view` lets this node issue now, with `wanted` (-1: any leased node).
bool view_allows(const View& view, int64_t now_us, int64_t wanted) {
  return lease::may_issue(grant_of(view, view_is_current(view)), now_us, wanted) ==
         lease::Verdict::kAllowed;
}

}  // namespace

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
      if (unlikely(view.gap_until > 0)) cross_gap(view);
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
  // The second pass, if any, under the lease registered_node() waited for
  // (perhaps held again after a takeover): the same decision.
  for (bool waited = false;; waited = true) {
    View view;
    read_view(&view, kHotSize);
    switch (lease::may_return(grant_of(view, view_is_current(view)), lease_clock_us(), node,
                              timestamp)) {
      case lease::Verdict::kAllowed:
        return;
      case lease::Verdict::kAtCap:
        refuse_ids_before(timestamp);
      case lease::Verdict::kBelowFloor:
        refuse_below_floor(timestamp);
      case lease::Verdict::kInGap:
        // A race with cross_gap(): the next reservation lies above the gap.
        if (Generator* generator = node_generator(); generator != nullptr)
          generator->raise_floor(view.gap_until);
        refuse_in_gap(timestamp);
      default:
        break;
    }
    // Says why: the lease ran out, another node holds the identity, ... (from
    // the whole View: the error's text lies past its hot part).
    if (waited || registered_node() != node) {
      read_view(&view, sizeof(View));
      refuse_unconfirmed(view, false);
    }
  }
}

namespace {

// The generator waits at the end of the gap after a change of the registry's
// history (cross_gap raised it there), further ahead of the clock than
// max_lead: say so rather than "clock moved backwards".
void explain_gap(const View& view, int64_t last_timestamp, int64_t clock) {
  const Layout& layout = settings.layout;
  if (view.state != State::kHeld || view.gap_until <= 0 || last_timestamp != view.gap_until - 1 ||
      layout.start_ms(view.gap_until) - clock <= settings.max_lead_ms)
    return;
  const int64_t epoch_ms = layout.epoch_ms();
  const int64_t from = layout.start_ms(view.gap_until) - settings.max_lead_ms;
  ereport(ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("snowflake identity datacenter_id %d, worker_id %d skips the IDs a holder the "
                  "registry forgot may have issued, up to %s",
                  view.datacenter_id, view.worker_id,
                  timestamp_text(timestamptz_from_unix_ms(layout.unix_ms(view.gap_until)))),
           errdetail("The registry's history changed at %s while this node held the identity: it "
                     "issues no ID between %s, its limit then, and %s. IDs are issued from %s, "
                     "when this node's clock (now %s) is within snowflake.max_lead (%d ms) of "
                     "that time; that is %lld ms from now.",
                     registry_time(view.registry.history_changed_at),
                     timestamp_text(timestamptz_from_unix_ms(layout.unix_ms(view.gap_from))),
                     timestamp_text(timestamptz_from_unix_ms(layout.unix_ms(view.gap_until))),
                     timestamp_text(timestamptz_from_unix_ms(from + epoch_ms)),
                     timestamp_text(timestamptz_from_unix_ms(clock + epoch_ms)),
                     settings.max_lead_ms, static_cast<long long>(from - clock)),
           errhint("Wait until then; see \"What it must keep\" in doc/registry.md. With "
                   "snowflake.max_lead >= snowflake.registry_lease a holder goes past the gap "
                   "without waiting.")));
}

}  // namespace

void explain_clock_behind(int64_t last_timestamp, int64_t clock) {
  View view;
  read_view(&view, sizeof(View));
  explain_gap(view, last_timestamp, clock);
  // Only while the generator has issued nothing at or above the floor.
  const Layout& layout = settings.layout;
  if (view.state != State::kHeld || view.floor <= 0 || last_timestamp >= view.floor ||
      layout.start_ms(view.floor) - clock <= settings.max_lead_ms)
    return;
  const int64_t epoch_ms = layout.epoch_ms();
  const int64_t from = layout.start_ms(view.floor) - settings.max_lead_ms;
  ereport(ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("this node is taking snowflake identity datacenter_id %d, worker_id %d over "
                  "from %s, whose IDs may run up to %s",
                  view.datacenter_id, view.worker_id,
                  view.floor_host[0] != '\0' ? view.floor_host : "its previous holder",
                  timestamp_text(timestamptz_from_unix_ms(layout.unix_ms(view.floor)))),
           errdetail("IDs are issued from %s, when this node's clock (now %s) is within "
                     "snowflake.max_lead (%d ms) of that time; that is %lld ms from now.",
                     timestamp_text(timestamptz_from_unix_ms(from + epoch_ms)),
                     timestamp_text(timestamptz_from_unix_ms(clock + epoch_ms)),
                     settings.max_lead_ms, static_cast<long long>(from - clock)),
           errhint("Wait until then, or set snowflake.max_lead >= snowflake.registry_lease "
                   "(plus the previous holder's snowflake.max_lead) so that a takeover issues "
                   "IDs at once, ahead of the clock.")));
}

}  // namespace snowflake::pg
