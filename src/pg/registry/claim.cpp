// Claims: the statements that lease identities in the registry, and what a
// claim hands over to the new holder.
//
// Claims. One statement claims or renews a row: an upsert that succeeds only
// if the row is free, or expired (registry clock), or
//   - the claimant is its holder: the same system identifier, timeline, host,
//     data directory and token (the same running postmaster: view.cpp draws
//     the token at its start), renewing; or
//   - the claimant succeeds its holder (the same system identifier on a later
//     timeline: a promoted standby, a restored backup, a promoted copy; or on
//     the same timeline, host and data directory with another token: this
//     node restarted, or a clone of it) and the holder has let go of it:
//     released at a clean shutdown (kRelease), or stale, not renewed for two
//     thirds of its lease (it renews every third, and retries every second).
// So two running postmasters never pass for one holder, and a restored copy
// or a clone of a live node is refused (a configured identity stays in
// conflict and retries; an automatic one picks another identity) while the
// original renews; a failover's promoted standby waits until the dead
// primary's row is stale, a switchover's at once. A copy of a data directory
// on the same timeline elsewhere waits for the lease to expire like any other
// node. Lease times are the registry's now(), so node clocks do not matter.
//
// The rule that keeps a takeover apart, even from a holder that still runs.
// Each claim and renewal reports ids_before (the later of the node's clock and
// its last ID, plus the lease, snowflake.max_lead and 1 ms; never less than the
// last accepted one, so a clock stepped back lowers nothing; at least the floor
// below plus the same window); the registry keeps it in the row and returns
// it. The holder never returns an ID whose timestamp is at or above the
// ids_before of its last accepted claim or renewal, nor below the floor of its
// last takeover (IDs reserved before a reclaim raised it): issue() checks both
// after reserving, with the lease (confirm_registered_node in lease.cpp, on
// lease::may_return), so a forward clock step, a larger max_lead or a backend
// paused across a takeover cannot pass them. src/core/lease.hpp holds these
// decisions; src/core/registry_row.hpp the statements' pure version. Whenever the row
// passes to anyone but the same holder, the row's inherited_ids_before becomes
// the largest ids_before of the holders before (greatest(ids_before,
// inherited_ids_before)), and the new holder raises its generator's floor to
// it (Generator::raise_floor: the first ID there still makes a durable bound
// first) before it publishes the lease. So its IDs are above every ID the
// previous holder returned or can still return before it is fenced at its
// next renewal. When the floor is further ahead of the clock than max_lead,
// the new holder's IDs wait for its clock (explain_clock_behind says so): a
// promoted standby issues at once when its predecessor released its row (or
// its floor is past), and a restore or copy of a live node waits up to a lease
// unless max_lead >= the lease.
#include "claim.hpp"

#include <unistd.h>

#include <cstdlib>
#include <new>

#include "../../core/clock.hpp"
#include "../../core/lease.hpp"
#include "../../core/pick.hpp"
#include "../node.hpp"
#include "../settings.hpp"
#include "../text.hpp"
#include "../time.hpp"
#include "client.hpp"
#include "durability.hpp"
#include "history.hpp"
#include "statements.hpp"

extern "C" {
#include "postmaster/postmaster.h"
}

namespace snowflake::pg::registry {

namespace {

// A registry time sent as microseconds since 1970; NULL stands for infinity
// (a row an administrator reserved for good).
TimestampTz registry_timestamp(const PGresult* result, int column) {
  if (PQgetisnull(result, 0, column)) return DT_NOEND;
  return strtoll(PQgetvalue(result, 0, column), nullptr, 10) - kPostgresEpochUnixMs * 1000;
}

// Above every ID this node may issue under a lease of lease_ms from now, and
// never below the cap of the lease it renews (lease::ids_before_to_report).
int64_t ids_before_ms(int64_t cap_ms) {
  int64_t last_ms = 0;
  if (Generator* generator = node_generator(); generator != nullptr) {
    const int64_t last = generator->state().last_id.load();
    last_ms = settings.layout.unix_ms(settings.layout.timestamp_of(last));
  }
  return lease::ids_before_to_report(unix_time_ms(), last_ms, settings.registry_lease_ms,
                                     settings.max_lead_ms, cap_ms);
}

}  // namespace

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
  self->token = shared->token;
}

void claim(const Self& self, const registry_round::Request& request, registry_round::Answer* answer,
           ClaimRow* out, char* error) {
  answer->outcome = registry_round::Answer::kFailed;
  char datacenter[16], work[16], timeline[24], lease[16], ids_before[24], window[24], token[24];
  const char* table = with_table("{table}");
  snprintf(datacenter, sizeof(datacenter), "%d", request.datacenter_id);
  snprintf(work, sizeof(work), "%d", request.worker_id);
  snprintf(timeline, sizeof(timeline), "%lld", static_cast<long long>(self.timeline));
  snprintf(lease, sizeof(lease), "%d", settings.registry_lease_ms);
  snprintf(ids_before, sizeof(ids_before), "%lld",
           static_cast<long long>(ids_before_ms(request.cap_ms)));
  snprintf(
      window, sizeof(window), "%lld",
      static_cast<long long>(lease::window_ms(settings.registry_lease_ms, settings.max_lead_ms)));
  snprintf(token, sizeof(token), "%lld", static_cast<long long>(self.token));
  const char* const parameters[] = {datacenter,
                                    work,
                                    self.system_identifier,
                                    timeline,
                                    self.host,
                                    self.data_directory,
                                    self.cluster_name,
                                    lease,
                                    ids_before,
                                    window,
                                    token,
                                    table};
  answer->sent_us = lease_clock_us();
  PGresult* result = run(with_table(kClaim), 12, parameters, error);
  if (result == nullptr) return;
  if (PQntuples(result) != 1) {
    PQclear(result);
    answer->outcome = registry_round::Answer::kRace;  // a row inserted meanwhile by another node
    return;
  }
  Holder& row = out->row;
  copy_printable(row.system_identifier, sizeof(row.system_identifier), PQgetvalue(result, 0, 1));
  row.timeline = strtoll(PQgetvalue(result, 0, 2), nullptr, 10);
  copy_printable(row.host, sizeof(row.host), PQgetvalue(result, 0, 3));
  copy_printable(row.data_directory, sizeof(row.data_directory), PQgetvalue(result, 0, 4));
  row.claimed_at = registry_timestamp(result, 5);
  row.renewed_at = registry_timestamp(result, 6);
  row.expires_at = registry_timestamp(result, 7);
  answer->renewed_at_us =
      PQgetisnull(result, 0, 6) ? INT64_MAX : strtoll(PQgetvalue(result, 0, 6), nullptr, 10);
  answer->inherited_ms =
      PQgetisnull(result, 0, 8) ? -1 : strtoll(PQgetvalue(result, 0, 8), nullptr, 10);
  copy_printable(out->taken_from, sizeof(out->taken_from),
                 PQgetisnull(result, 0, 9) ? "" : PQgetvalue(result, 0, 9));
  answer->taken = out->taken_from[0] != '\0';
  answer->ids_before_ms =
      PQgetisnull(result, 0, 10) ? -1 : strtoll(PQgetvalue(result, 0, 10), nullptr, 10);
  answer->table = strtoll(PQgetvalue(result, 0, 11), nullptr, 10);
  answer->existed = strcmp(PQgetvalue(result, 0, 12), "t") == 0;
  // An infinite renewed_at (a row an administrator reserved) is never older.
  answer->previous_renewed_at_us = !answer->existed ? 0
                                   : PQgetisnull(result, 0, 13)
                                       ? INT64_MAX
                                       : strtoll(PQgetvalue(result, 0, 13), nullptr, 10);
  answer->now_us = strtoll(PQgetvalue(result, 0, 14), nullptr, 10);
  const bool claimed = strcmp(PQgetvalue(result, 0, 0), "t") == 0;
  PQclear(result);
  answer->outcome = claimed ? registry_round::Answer::kClaimed : registry_round::Answer::kTaken;
}

// The rows of the range, read with one statement; src/core/pick.hpp decides.
void pick(const Self& self, registry_round::Answer* answer, char* error) {
  answer->outcome = registry_round::Answer::kFailed;
  const automatic::Range range = automatic::range_of(settings.layout, settings.datacenter_id);
  char low[16], high[16], workers[16];
  snprintf(low, sizeof(low), "%d", range.first_datacenter_id);
  snprintf(high, sizeof(high), "%d", range.last_datacenter_id);
  snprintf(workers, sizeof(workers), "%d", range.last_worker_id);
  const char* const parameters[] = {low, high, workers};
  PGresult* result = run(with_table(kPick), 3, parameters, error);
  if (result == nullptr) return;

  // Views of the result's text, which outlives the pick; in the round's memory context.
  const int count = PQntuples(result);
  auto* rows = static_cast<automatic::Row*>(palloc(sizeof(automatic::Row) * count));
  for (int i = 0; i < count; i++) {
    automatic::Row& row = *new (&rows[i]) automatic::Row;
    row.datacenter_id = atoi(PQgetvalue(result, i, 0));
    row.worker_id = atoi(PQgetvalue(result, i, 1));
    row.holder.system_identifier = PQgetvalue(result, i, 2);
    row.holder.timeline = strtoll(PQgetvalue(result, i, 3), nullptr, 10);
    row.holder.host = PQgetvalue(result, i, 4);
    row.holder.data_directory = PQgetvalue(result, i, 5);
    row.live = strcmp(PQgetvalue(result, i, 6), "t") == 0;
    row.holder.token = strtoll(PQgetvalue(result, i, 7), nullptr, 10);
    row.released = strcmp(PQgetvalue(result, i, 8), "t") == 0;
    row.stale = strcmp(PQgetvalue(result, i, 9), "t") == 0;
  }
  const automatic::HolderText me{self.system_identifier, self.timeline, self.host,
                                 self.data_directory, self.token};
  const automatic::Pick choice = automatic::pick(range, me, rows, static_cast<size_t>(count));
  pfree(rows);
  PQclear(result);
  answer->outcome =
      choice.found ? registry_round::Answer::kPicked : registry_round::Answer::kNoneFree;
  answer->datacenter_id = choice.datacenter_id;
  answer->worker_id = choice.worker_id;
}

// A new holder starts above its predecessors (renewals hand over the same
// floor, which then changes nothing).
void raise_floor(int64_t floor, int64_t floor_ms, bool log, const View& view) {
  Generator* generator = node_generator();
  if (generator == nullptr) return;
  generator->raise_floor(floor);
  if (!log) return;
  ereport(LOG,
          (errmsg("snowflake registry: continuing above the previous holder's IDs, which run "
                  "up to %s",
                  timestamp_text(timestamptz_from_unix_ms(floor_ms))),
           errdetail("The previous holder of the identity (%s) may have issued IDs up to that "
                     "time; this node's clock is behind it by %lld ms, snowflake.max_lead is "
                     "%d ms.",
                     view.floor_host[0] != '\0' ? view.floor_host : "unknown",
                     static_cast<long long>(floor_ms - unix_time_ms()), settings.max_lead_ms)));
}

bool release_row(const Self& self, int datacenter_id, int worker_id, int64_t renewed_at_us,
                 int64_t ids_before, bool* released, char* error) {
  char datacenter[16], work[16], timeline[24], before[24], renewed[24], token[24];
  snprintf(datacenter, sizeof(datacenter), "%d", datacenter_id);
  snprintf(work, sizeof(work), "%d", worker_id);
  snprintf(timeline, sizeof(timeline), "%lld", static_cast<long long>(self.timeline));
  snprintf(before, sizeof(before), "%lld", static_cast<long long>(ids_before));
  snprintf(renewed, sizeof(renewed), "%lld", static_cast<long long>(renewed_at_us));
  snprintf(token, sizeof(token), "%lld", static_cast<long long>(self.token));
  const char* const parameters[] = {datacenter, work,      self.system_identifier,
                                    timeline,   self.host, self.data_directory,
                                    before,     renewed,   token};
  PGresult* result = run(with_table(kRelease), 9, parameters, error);
  if (result == nullptr) return false;
  *released = strcmp(PQcmdTuples(result), "1") == 0;
  PQclear(result);
  return true;
}

registry_round::Answer ask_registry(const registry_round::Request& request, ClaimRow* row,
                                    RegistryFacts* facts, char* error) {
  registry_round::Answer answer;
  Self self;
  describe_self(&self);
  if (!connected() && !connect_registry(error)) return answer;
  if (request.probe && (!probe_durability(facts, error) || !probe_history(*facts, &answer, error)))
    return answer;
  if (request.kind == registry_round::Request::kClaim)
    claim(self, request, &answer, row, error);
  else
    pick(self, &answer, error);
  return answer;
}

void record_row(const ClaimRow& row, registry_round::FloorFrom floor_from, bool held, View* view) {
  Self self;
  describe_self(&self);
  if (held) {
    view->mine = row.row;
    view->error[0] = '\0';
    view->error_at = 0;
    if (floor_from == registry_round::FloorFrom::kNone) view->floor_host[0] = '\0';
    if (floor_from == registry_round::FloorFrom::kPreviousHolder)
      strlcpy(view->floor_host, row.taken_from, sizeof(view->floor_host));
    if (floor_from == registry_round::FloorFrom::kForgottenHolder)
      strlcpy(view->floor_host, "a holder the registry may have forgotten",
              sizeof(view->floor_host));
  } else {
    view->other = row.row;
    view->mine.timeline = self.timeline;
    strlcpy(view->mine.host, self.host, sizeof(view->mine.host));
    strlcpy(view->mine.data_directory, self.data_directory, sizeof(view->mine.data_directory));
  }
  strlcpy(view->mine.system_identifier, self.system_identifier,
          sizeof(view->mine.system_identifier));
}

void release_lease(const registry_round::Request& request, char* error) {
  pg_memory_barrier();  // the View said released before last_id is read
  Generator* generator = node_generator();
  if (generator == nullptr) return;
  const int64_t ids_before =
      lease::release_ids_before_ms(settings.layout, generator->state().last_id.load());
  start_release();
  Self self;
  describe_self(&self);
  bool released = false;
  if ((!connected() && !connect_registry(error)) ||
      !release_row(self, request.datacenter_id, request.worker_id, request.renewed_at_us,
                   ids_before, &released, error)) {
    ereport(LOG, (errmsg("snowflake registry: could not release datacenter_id %d, worker_id %d: %s",
                         request.datacenter_id, request.worker_id, error),
                  errdetail("The row keeps the ids_before of its last renewal.")));
    return;
  }
  if (released)
    ereport(LOG, (errmsg("snowflake registry: released datacenter_id %d, worker_id %d",
                         request.datacenter_id, request.worker_id),
                  errdetail("The registry row now says this node's IDs run up to %s; a standby "
                            "promoted in its place, or this node restarted, takes it over and "
                            "issues at once. The lease runs on for other nodes.",
                            timestamp_text(timestamptz_from_unix_ms(ids_before)))));
}

}  // namespace snowflake::pg::registry
