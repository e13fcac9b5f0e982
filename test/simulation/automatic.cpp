// Automatic leasing in the simulation: the pick a node without a worker_id
// asks for (its round, src/core/registry_round.hpp, decides when), answered
// by the registry as claim.cpp's pick() is (its rows of the range read at the
// registry's clock, then automatic::pick of src/core/pick.hpp on them). The
// claim of the identity picked is a separate message (messages.cpp), so
// another node's claim may come first.
#include <cstdio>

#include "simulation.hpp"

namespace snowflake::sim {

namespace {

automatic::HolderText text_of(const registry_row::Holder& holder) {
  return automatic::HolderText{holder.system_identifier.c_str(), holder.timeline,
                               holder.host.c_str(), holder.data_directory.c_str(), holder.token};
}

}  // namespace

void World::send_pick(Node& node, const registry_round::Request& request) {
  Message message;
  if (!begin_request(node, &message)) return;
  message.is_pick = true;
  message.probe = request.probe;
  message.claim.self = node.self;
  post(node, message, EventKind::kRegistryPick);
}

// The pick's SELECT at the registry's now(): every row of the range, live if
// expires_at >= now(); the decision is the core's. A node whose own live row
// is there must get a live row of its own back (a restart within the lease
// keeps its identity): a pick that passes over it is a violation.
void World::registry_pick(size_t index) {
  Message& message = messages_[index];
  Node& node = *nodes_[static_cast<size_t>(message.node)];
  if (now_ < outage_until_) return;
  const int64_t now_us = kStartUs + now_;
  const int workers = range_.last_worker_id + 1;
  const automatic::HolderText self = text_of(message.claim.self);
  bool own_live = false;
  pick_rows_.clear();
  for (size_t i = 0; i < rows_.size(); i++) {
    const registry_row::Row& row = rows_[i];
    if (!row.exists) continue;
    automatic::Row view;
    view.datacenter_id = static_cast<int>(i) / workers;
    view.worker_id = static_cast<int>(i) % workers;
    view.holder = text_of(row.holder);
    view.live = row.expires_at_us >= now_us;
    view.released = row.released;
    view.stale = registry_row::stale(row, now_us);
    own_live = own_live || (view.live && row.holder == message.claim.self);
    pick_rows_.push_back(view);
  }
  const automatic::Pick pick = automatic::pick(range_, self, pick_rows_.data(), pick_rows_.size());
  message.pick = pick;
  message.registry = registry_;
  message.registry_now_us = now_us;
  figures_.picks++;
  const registry_row::Row* chosen =
      pick.found ? &rows_[static_cast<size_t>(layout_.node(pick.datacenter_id, pick.worker_id))]
                 : nullptr;
  const bool own = chosen != nullptr && chosen->exists && chosen->holder == message.claim.self;
  if (pick.found) {
    if (own) figures_.own_picks++;
  } else {
    figures_.none_free++;
  }
  // (The pick sorted pick_rows_; the chosen row's view, found again.)
  const automatic::Row* chosen_view = nullptr;
  for (const automatic::Row& view : pick_rows_)
    if (pick.found && view.datacenter_id == pick.datacenter_id && view.worker_id == pick.worker_id)
      chosen_view = &view;
  if (own_live &&
      !(chosen_view != nullptr && chosen_view->live && automatic::is_mine(self, *chosen_view))) {
    figures_.lost_identities++;
    note("pick of " + node.self.host + " passed over its own live row");
  }
  if (config_.trace)
    std::printf("  %9.3f s  pick         %s (timeline %lld) -> %s %d/%d\n",
                static_cast<double>(now_) / 1e6, message.claim.self.host.c_str(),
                static_cast<long long>(message.claim.self.timeline),
                !pick.found                                         ? "none free"
                : own                                               ? "its own row"
                : chosen->exists && chosen->expires_at_us >= now_us ? "a row of its system"
                : chosen->exists                                    ? "an expired row"
                                                                    : "a new row",
                pick.datacenter_id, pick.worker_id);
  reply(node, EventKind::kWorkerPicked, message.incarnation, index);
}

// The pick's answer as the worker reads it (after the probe).
void World::worker_picked(Node& node, size_t index) {
  const Message& message = messages_[index];
  if (node.request != message.request) return;  // the deadline passed first
  node.request = 0;
  registry_round::Answer answer;
  answer.outcome =
      message.pick.found ? registry_round::Answer::kPicked : registry_round::Answer::kNoneFree;
  answer.probed = message.probe;
  answer.registry = message.registry;
  answer.probe_now_ms = message.registry_now_us / 1000;
  answer.longest_lease_ms = config_.lease_ms;
  answer.datacenter_id = message.pick.datacenter_id;
  answer.worker_id = message.pick.worker_id;
  if (config_.mutant == Mutant::kNoHistoryDefence) answer.registry = registry_history::Identity{};
  worker_answer(node, answer);
}

}  // namespace snowflake::sim
