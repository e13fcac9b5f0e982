// The registry worker in the simulation and the registry's answers. The
// worker is the real round (src/core/registry_round.hpp), stepped at each of
// its ticks, answers and deadlines with the node's simulated clocks and
// generator; this file only carries what it asks: claims and renewals as
// messages to the registry (claim.cpp's statement, lost, late or applied as
// the faults of faults.cpp decide), their deadlines, the release at
// shutdown, and the registry's answers back as the round's events. Picks are
// in automatic.cpp.
//
// Every request of the simulated worker is on a new connection (Now's
// connected is false), so each asks for the probe, and the registry's answer
// carries its identity and clock: a change of its history is seen at the
// first answer after it.
#include <algorithm>
#include <cstdio>

#include "simulation.hpp"

namespace snowflake::sim {

namespace {

const char* change_name(registry_round::HistoryChange::What what) {
  switch (what) {
    case registry_round::HistoryChange::kIdentity:
      return "its identity";
    case registry_round::HistoryChange::kUnreadable:
      return "unreadable";
    case registry_round::HistoryChange::kRowGone:
      return "a row gone";
    case registry_round::HistoryChange::kRowOlder:
      return "a row older";
  }
  return "?";
}

}  // namespace

// The worker's settings: a configured node's identity (its registry row,
// also its node field), or none (automatic leasing).
registry_round::Settings World::round_settings(const Node& node) const {
  registry_round::Settings settings;
  settings.layout = layout_;
  const int workers = static_cast<int>(layout_.max_worker_id()) + 1;
  settings.datacenter_id = node.configured >= 0 ? node.configured / workers : -1;
  settings.worker_id = node.configured >= 0 ? node.configured % workers : -1;
  settings.node = node.configured;
  settings.lease_ms = config_.lease_ms;
  settings.max_lead_ms = max_lead_ms_;
  return settings;
}

// One step of the node's round, and what it asks done: the generator raised,
// the history remembered (pg_snowflake/registry), a request sent, or the next
// tick.
void World::worker_step(Node& node, const registry_round::Event& event) {
  const registry_round::Now now{mono(node), node.wall.at(now_) / 1000, node.state->last_id.load(),
                                false};
  const registry_round::Output out =
      registry_round::step(&node.round, round_settings(node), event, now);
  node.history = node.round.history;
  // The mutant: a holder that sees a change goes on above its cap (1.7).
  if (config_.mutant == Mutant::kNoHistoryGap) node.round.gap_from = node.round.gap_until = 0;
  int change = 0;
  for (int i = 0; i < out.count; i++) {
    switch (out.actions[i]) {
      case registry_round::Action::kRaiseFloor:
        node.generator->raise_floor(out.floor);
        break;
      case registry_round::Action::kHistoryChanged:
        // Counted once an answer (the probe's and the row's may both see it).
        if (change == 0) figures_.history_changes++;
        if (config_.trace)
          std::printf("  %9.3f s  history      %s sees a change (%s), floor %lld\n",
                      static_cast<double>(now_) / 1e6, node.self.host.c_str(),
                      change_name(out.changes[std::min(change, 1)].what),
                      static_cast<long long>(node.round.history.floor_ms));
        change++;
        break;
      case registry_round::Action::kClaimAboveFloor:
        figures_.history_floors++;
        break;
      default:  // the View and the server log: the round and grant() are the View
        break;
    }
  }
  switch (out.request.kind) {
    case registry_round::Request::kClaim:
      send_claim(node, out.request);
      return;
    case registry_round::Request::kPick:
      send_pick(node, out.request);
      return;
    case registry_round::Request::kRelease:
      send_release(node, out.request);
      return;
    case registry_round::Request::kNone:
      break;
  }
  if (out.wake_at_us >= 0)
    schedule(std::max<int64_t>(0, out.wake_at_us - mono(node)), EventKind::kWorkerTick, node.index,
             0, node.incarnation, 0);
}

void World::worker_answer(Node& node, const registry_round::Answer& answer) {
  registry_round::Event event;
  event.kind = registry_round::Event::kAnswer;
  event.answer = answer;
  worker_step(node, event);
}

void World::worker_tick(Node& node) {
  if (node.registryless) return;
  worker_step(node, registry_round::Event{});
}

// A request of the worker begun: its number and its deadline (the worker
// gives up after registry_round::request_timeout_ms). false when the request
// is lost on the way (a partition, an outage); else `message` is addressed
// from this request.
bool World::begin_request(Node& node, Message* message) {
  const int64_t now_mono = mono(node);
  node.request = ++requests_;
  schedule(registry_round::request_timeout_ms(config_.lease_ms) * 1000, EventKind::kWorkerDeadline,
           node.index, 0, node.incarnation, static_cast<int64_t>(node.request));
  if (!reachable(node)) return false;
  message->node = node.index;
  message->incarnation = node.incarnation;
  message->request = node.request;
  message->sent_mono = now_mono;
  return true;
}

// The message on its way to the registry, arriving as `kind` after the
// network's delay.
void World::post(Node& node, const Message& message, EventKind kind) {
  messages_.push_back(message);
  schedule(network_delay(node), kind, node.index, 0, 0, static_cast<int64_t>(messages_.size() - 1));
}

// The registry's answer to message `index` on its way back: lost to a fault
// (a lost reply, a partition, an outage), or delivered as `kind`.
void World::reply(Node& node, EventKind kind, uint64_t incarnation, size_t index) {
  if (node.lose_next_reply || !reachable(node)) {
    node.lose_next_reply = false;
    return;
  }
  schedule(rng_.range(200, 3000), kind, node.index, 0, incarnation, static_cast<int64_t>(index));
}

// A claim or renewal: the ids_before it reports is lease::ids_before_to_report
// with the request's cap, at sending (claim.cpp).
void World::send_claim(Node& node, const registry_round::Request& request) {
  Message message;
  if (!begin_request(node, &message)) return;
  const int64_t last_ms = layout_.unix_ms(layout_.timestamp_of(node.state->last_id.load()));
  // The mutant: a renewal reports no more than its clock says (before issue 29).
  const int64_t cap = config_.mutant == Mutant::kNoCapReport ? 0 : request.cap_ms;
  message.identity = static_cast<int>(layout_.node(request.datacenter_id, request.worker_id));
  message.picked = request.after_pick;
  message.probe = request.probe;
  message.claim.self = node.self;
  message.claim.lease_ms = config_.lease_ms;
  message.claim.ids_before_ms = lease::ids_before_to_report(node.wall.at(now_) / 1000, last_ms,
                                                            config_.lease_ms, max_lead_ms_, cap);
  message.claim.window_ms = lease::window_ms(config_.lease_ms, max_lead_ms_);
  post(node, message, EventKind::kRegistryClaim);
}

// The request timed out: a failure.
void World::worker_deadline(Node& node, uint64_t request) {
  if (node.request != request) return;
  node.request = 0;
  worker_answer(node, registry_round::Answer{});
}

// The registry: the claim statement's pure version at the registry's clock.
void World::registry_claim(size_t index) {
  Message& message = messages_[index];
  Node& node = *nodes_[static_cast<size_t>(message.node)];
  if (now_ < outage_until_) return;
  registry_row::Row& row = rows_[static_cast<size_t>(message.identity)];
  registry_row::ClaimRequest request = message.claim;
  // The mutant: the claim before issue 37, whose same holder had no token.
  if (config_.mutant == Mutant::kNoToken && row.exists &&
      registry_row::relation(row.holder, request.self) == registry_row::Relation::kSuccessor &&
      row.holder.timeline == request.self.timeline)
    request.self.token = row.holder.token;
  message.answer = registry_row::claim(row, request, kStartUs + now_);
  message.registry = registry_;
  message.registry_now_us = kStartUs + now_;
  if (message.answer.taken) {
    figures_.takeovers++;
    if (message.picked) figures_.automatic_takeovers++;
    if (node.clone_of >= 0) figures_.clone_takeovers++;
  }
  reply(node, EventKind::kWorkerReply, message.incarnation, index);
}

// The claim's answer as the worker reads it (claim.cpp claim(), after the
// probe of history.cpp).
void World::worker_reply(Node& node, size_t index) {
  const Message& message = messages_[index];
  if (node.request != message.request) return;  // the deadline passed first
  node.request = 0;
  const registry_row::ClaimAnswer& claim = message.answer;
  if (!claim.claimed && message.picked) figures_.lost_races++;
  registry_round::Answer answer;
  answer.outcome =
      claim.claimed ? registry_round::Answer::kClaimed : registry_round::Answer::kTaken;
  answer.probed = message.probe;
  answer.registry = message.registry;
  answer.probe_now_ms = message.registry_now_us / 1000;
  answer.longest_lease_ms = config_.lease_ms;
  answer.sent_us = message.sent_mono;
  // The mutant: a takeover hands no floor over.
  answer.inherited_ms = config_.mutant == Mutant::kNoFloor ? -1 : claim.inherited_ms;
  answer.ids_before_ms = claim.ids_before_ms;
  answer.taken = claim.taken;
  answer.table = message.registry.table;
  answer.existed = claim.existed;
  answer.previous_renewed_at_us = claim.previous_renewed_at_us;
  answer.now_us = message.registry_now_us;
  answer.renewed_at_us = claim.row.renewed_at_us;
  // The mutant: the answers tell nothing of the registry's history (1.6's).
  if (config_.mutant == Mutant::kNoHistoryDefence) {
    answer.registry = registry_history::Identity{};
    answer.table = 0;
    answer.existed = true;
    answer.previous_renewed_at_us = INT64_MAX;
  }
  worker_answer(node, answer);
}

// The release at a clean shutdown (the round's): the View said released
// first, then last_id gives the ids_before sent.
void World::release(Node& node) {
  if (!node.registryless) {
    registry_round::Event shutdown;
    shutdown.kind = registry_round::Event::kShutdown;
    worker_step(node, shutdown);
  }
}

void World::send_release(Node& node, const registry_round::Request& request) {
  if (!reachable(node)) return;
  Message message;
  message.node = node.index;
  message.identity = static_cast<int>(layout_.node(request.datacenter_id, request.worker_id));
  message.is_release = true;
  message.claim.self = node.self;
  message.renewed_at_us = request.renewed_at_us;
  message.release_ms = lease::release_ids_before_ms(layout_, node.state->last_id.load());
  post(node, message, EventKind::kRegistryRelease);
}

void World::registry_release(size_t index) {
  const Message& message = messages_[index];
  if (now_ < outage_until_) return;
  registry_row::Row& row = rows_[static_cast<size_t>(message.identity)];
  // The mutant: the release statement before issue 29 (any row of the holder).
  const int64_t renewed_at =
      config_.mutant == Mutant::kStaleRelease ? row.renewed_at_us : message.renewed_at_us;
  registry_row::Holder self = message.claim.self;
  if (config_.mutant == Mutant::kNoToken && row.exists &&
      registry_row::relation(row.holder, self) == registry_row::Relation::kSuccessor &&
      row.holder.timeline == self.timeline)
    self.token = row.holder.token;
  (void)registry_row::release(row, self, renewed_at, message.release_ms);
}

}  // namespace snowflake::sim
