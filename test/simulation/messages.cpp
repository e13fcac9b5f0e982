// The registry worker's messages in the simulation and the registry's
// answers: claims and renewals (worker.cpp attempt(), claim.cpp claim()),
// their deadlines, the replies, the release at shutdown; each lost, late or
// applied as the faults (faults.cpp) decide; what an answer says of the
// registry's history (history.cpp). Picks are in automatic.cpp.
#include <algorithm>
#include <cstdio>

#include "simulation.hpp"

namespace snowflake::sim {

// A request of the worker begun: its number and its deadline (the worker
// gives up after lease / 4, at most 10 s, as client.cpp does). false when the
// request is lost on the way (a partition, an outage); else `message` is
// addressed from this request.
bool World::begin_request(Node& node, Message* message) {
  const int64_t now_mono = mono(node);
  node.request = ++requests_;
  node.request_sent_mono = now_mono;
  schedule(std::min<int64_t>(lease_us_ / 4, 10000000), EventKind::kWorkerDeadline, node.index, 0,
           node.incarnation, static_cast<int64_t>(node.request));
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

// A claim or renewal whose ids_before is lease::ids_before_to_report, sent
// with a deadline; `picked`: of the identity a pick gave.
void World::send_claim(Node& node, int identity, bool picked) {
  Message message;
  if (!begin_request(node, &message)) return;
  const int64_t last_ms = layout_.unix_ms(layout_.timestamp_of(node.state->last_id.load()));
  const int64_t cap =
      config_.mutant == Mutant::kNoCapReport ? 0 : lease::cap_ms(layout_, node.grant.ids_before);
  const bool renewal = node.grant.held && node.grant.node == identity;  // cap_of()
  message.identity = identity;
  message.picked = picked;
  message.claim.self = node.self;
  message.claim.lease_ms = config_.lease_ms;
  message.claim.ids_before_ms = lease::ids_before_to_report(
      node.wall.at(now_) / 1000, last_ms, config_.lease_ms, max_lead_ms_, renewal ? cap : 0);
  message.claim.window_ms = lease::window_ms(config_.lease_ms, max_lead_ms_);
  post(node, message, EventKind::kRegistryClaim);
}

void World::worker_deadline(Node& node, uint64_t request) {
  if (node.request != request) return;
  node.request = 0;  // record_failure: the View keeps a lease held
  node.next_attempt_mono = lease::retry_at_us(mono(node), lease_us_);
  schedule(node.next_attempt_mono - mono(node), EventKind::kWorkerTick, node.index, 0,
           node.incarnation, 0);
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

// check_claim and probe_history (history.cpp): the registry's identity and the
// row before the claim against what the node remembers and last saw; a
// change raises the floor (src/core/registry_history.hpp) and, under a lease
// held, the gap above its cap.
// A pick's answer is the probe of a connection: the identity alone.
void World::check_history(Node& node, const Message& message) {
  if (config_.mutant == Mutant::kNoHistoryDefence) return;
  registry_history::Memory& memory = node.history;
  const registry_history::Identity before = memory.identity;
  unsigned change = registry_history::compare(before, message.registry);
  memory.identity = registry_history::merge(before, message.registry);
  const registry_row::ClaimAnswer& answer = message.answer;
  const bool same_row = !message.is_pick && node.seen_identity == message.identity &&
                        node.seen_table == message.registry.table;
  change |= registry_history::row_change(
      same_row ? node.seen_renewed_at_us : 0,
      registry_history::RowBefore{answer.existed, answer.previous_renewed_at_us});
  if (change != 0) {
    figures_.history_changes++;
    registry_history::seen_change(&memory, message.registry_now_us / 1000, config_.lease_ms,
                                  max_lead_ms_);
    if (config_.mutant != Mutant::kNoHistoryGap)
      lease::gap_after_change(&node.grant, layout_.timestamp_from_unix_ms(memory.floor_ms),
                              layout_.timestamp_of(node.state->last_id.load()));
    if (config_.trace)
      std::printf("  %9.3f s  history      %s sees a change (%u), floor %lld\n",
                  static_cast<double>(now_) / 1e6, node.self.host.c_str(), change,
                  static_cast<long long>(memory.floor_ms));
  }
  registry_history::seen_lease(&memory, config_.lease_ms);
  if (message.is_pick) return;
  node.seen_identity = message.identity;
  node.seen_table = message.registry.table;
  node.seen_renewed_at_us = answer.row.renewed_at_us;
}

// record_claim / record_conflict (worker.cpp), apply_inherited (claim.cpp).
// Automatic, a claim another node won is followed by a new pick, up to
// automatic::kPickAttempts claims in the round.
void World::worker_reply(Node& node, size_t index) {
  const Message& message = messages_[index];
  if (node.request != message.request) return;  // the deadline passed first
  node.request = 0;
  check_history(node, message);
  const registry_row::ClaimAnswer& answer = message.answer;
  if (!answer.claimed) {
    node.grant = lease::Grant{};
    if (node.configured < 0) {
      if (message.picked) figures_.lost_races++;
      if (++node.pick_round < automatic::kPickAttempts) {
        send_pick(node);
        return;
      }
    }
    node.next_attempt_mono = lease::retry_at_us(mono(node), lease_us_);
  } else {
    lease::Grant& grant = node.grant;
    const bool renewal = grant.held && grant.node == message.identity && !answer.taken;
    // After a change of the registry's history, anything but a renewal starts
    // at the floor (record_claim).
    int64_t inherited_ms = answer.inherited_ms;
    if (config_.mutant != Mutant::kNoHistoryDefence) {
      const int64_t floor_ms =
          registry_history::claim_floor_ms(node.history, inherited_ms, renewal);
      if (floor_ms > inherited_ms && floor_ms > node.wall.at(now_) / 1000)
        figures_.history_floors++;
      inherited_ms = floor_ms;
    }
    const int64_t inherited =
        config_.mutant == Mutant::kNoFloor ? 0 : lease::floor_from_inherited(layout_, inherited_ms);
    if (inherited > 0) node.generator->raise_floor(inherited);
    grant.floor = lease::floor_after_claim(grant.floor, renewal, inherited);
    lease::gap_after_claim(&grant, renewal);
    grant.held = true;
    grant.node = message.identity;
    grant.valid_until_us = lease::valid_until_us(message.sent_mono, lease_us_);
    grant.ids_before = lease::cap_from_ids_before(layout_, answer.ids_before_ms);
    node.renewed_at_us = answer.row.renewed_at_us;
    node.next_attempt_mono = lease::renew_at_us(message.sent_mono, lease_us_);
  }
  schedule(std::max<int64_t>(0, node.next_attempt_mono - mono(node)), EventKind::kWorkerTick,
           node.index, 0, node.incarnation, 0);
}

// The release at a clean shutdown (worker.cpp release()): the View says
// released first, then last_id gives the ids_before sent.
void World::release(Node& node) {
  if (!node.grant.held) return;
  node.grant.held = false;
  if (!reachable(node)) return;
  Message message;
  message.node = node.index;
  message.identity = static_cast<int>(node.grant.node);
  message.is_release = true;
  message.claim.self = node.self;
  message.renewed_at_us = node.renewed_at_us;
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
