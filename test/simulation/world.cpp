// The simulation's event loop: backends, workers, the registry and the
// standbys as events in simulated time, each step calling the real core code
// the PostgreSQL glue calls at that point (named in each comment). The
// registry worker (its round, and its messages to the registry) is in
// messages.cpp, picks in automatic.cpp, faults in faults.cpp. doc/simulation.md states what is
// simulated and assumed.
#include "world.hpp"

#include <algorithm>
#include <cmath>

#include "simulation.hpp"

namespace snowflake::sim {

int64_t Rng::exponential(int64_t mean) {
  const double u = (static_cast<double>(next() >> 11) + 1) * 0x1.0p-53;
  return std::max<int64_t>(1, static_cast<int64_t>(-std::log(u) * static_cast<double>(mean)));
}

World::World(const Config& config)
    : config_(config), rng_(config.seed), layout_(), lease_us_(config.lease_ms * 1000) {
  // The seed chooses the run's max_lead: none, a little, or a lease.
  const int64_t leads[] = {0, 50, config.lease_ms};
  max_lead_ms_ = leads[rng_.range(0, 2)];
  // And the share of nodes without a worker_id: none, a quarter, a half,
  // three quarters or all (--automatic overrides it).
  const double share =
      config.automatic >= 0 ? config.automatic : static_cast<double>(rng_.range(0, 4)) / 4;
  // Configured nodes share identities two by two (node i and node i + n/2);
  // automatic ones pick among the whole datacenters that hold those
  // identities (one, 32 identities, up to 64 nodes), so they contend with
  // each other and with the configured nodes.
  const int identities = std::max(1, config.nodes / 2);
  const int workers = static_cast<int>(layout_.max_worker_id()) + 1;
  range_.first_datacenter_id = 0;
  range_.last_datacenter_id = (identities - 1) / workers;
  range_.last_worker_id = workers - 1;
  rows_.resize(static_cast<size_t>((range_.last_datacenter_id + 1) * workers));
  for (int i = 0; i < config.nodes; i++) {
    const int configured = rng_.chance(share) ? -1 : i % identities;
    Node& node = add_node(configured, std::to_string(i + 1), 1, "n" + std::to_string(i));
    node.storage_bound = 0;
    schedule(rng_.range(0, 2000) * 1000, EventKind::kStart, node.index, 0, 0, 0);
  }
  // Nodes without the registry, each with a worker_id of its own in the last
  // datacenter (which no registry node leases).
  const int registryless = std::min(
      config.registryless >= 0 ? config.registryless : std::max(1, config.nodes / 10), workers);
  for (int i = 0; i < registryless; i++) {
    Node& node = add_node(i, "s" + std::to_string(i + 1), 1, "s" + std::to_string(i));
    node.registryless = true;
    figures_.registryless_nodes++;
    schedule(rng_.range(0, 2000) * 1000, EventKind::kStart, node.index, 0, 0, 0);
  }
  schedule_fault();
  if (config.registry_loses_commits) schedule(0, EventKind::kRegistrySnapshot, 0, 0, 0, 0);
}

Node& World::add_node(int configured, const std::string& system, int64_t timeline,
                      const std::string& host) {
  auto node = std::make_unique<Node>();
  node->index = static_cast<int>(nodes_.size());
  node->configured = configured;
  if (configured < 0) figures_.automatic_nodes++;
  node->self = registry_row::Holder{system, timeline, host, "/data"};
  // Clocks: the wall clock off by up to a second, both drifting (the lease
  // clock by at most 100 ppm against the registry's: doc/simulation.md).
  node->wall.base_true_us = now_;
  node->wall.base_us = kStartUs + now_ + rng_.range(-wall_spread_us(), wall_spread_us());
  node->wall.rate_ppm = rng_.range(-200, 200);
  node->mono.base_true_us = now_;
  node->mono.base_us = rng_.range(0, 1000000000);
  node->mono.rate_ppm = rng_.range(-100, 100);
  node->backends.resize(static_cast<size_t>(config_.backends));
  if (config_.nodes_knew_registry) node->history.identity = registry_history::Identity{1, 1, 1};
  // One node in ten without origin states (max_replication_slots = 0).
  node->origin_slots = !rng_.chance(0.1);
  nodes_.push_back(std::move(node));
  active_.push_back(nodes_.back()->index);
  return *nodes_.back();
}

void World::schedule(int64_t delay_us, EventKind kind, int node, int backend, uint64_t incarnation,
                     int64_t a) {
  queue_.push(Event{now_ + std::max<int64_t>(0, delay_us), sequence_++, kind, node, backend,
                    incarnation, a});
}

// The node field a backend issues under: a node without the registry's own,
// else the one the View leased.
int64_t World::node_field(const Node& node) const {
  if (node.registryless) return layout_.node(layout_.max_datacenter_id(), node.configured);
  return node.round.node;
}

int64_t World::wall_ms(const Node& node) const {
  return node.wall.at(now_) / 1000 - layout_.epoch_ms();
}

int64_t World::mono(const Node& node) const {
  return node.mono.at(now_);
}

bool World::reachable(const Node& node) const {
  return now_ >= node.partitioned_until && now_ >= outage_until_;
}

int64_t World::network_delay(Node& node) {
  int64_t delay = rng_.range(200, 3000);
  if (node.delay_next_message) {
    node.delay_next_message = false;
    delay += rng_.range(lease_us_ / 4, 2 * lease_us_);
  }
  return delay;
}

int64_t World::step_delay(Node& node) {
  if (node.stall_next > 0) {
    node.stall_next--;
    return rng_.range(lease_us_ / 2, 3 * lease_us_);
  }
  return rng_.range(1, 200);
}

// Postmaster start: the bound restored from the state file
// (Generator::restore), an empty View, the worker and the backends.
void World::start(Node& node) {
  node.incarnation++;
  node.up = true;
  // A new postmaster: a new token (view.cpp), never 0; the same postmaster
  // reinitializing after a crash keeps its own.
  if (!node.same_postmaster || node.self.token == 0)
    node.self.token = static_cast<int64_t>(rng_.next() >> 1) | 1;
  node.same_postmaster = false;
  node.state = std::make_unique<GeneratorState>();
  node.generator = std::make_unique<Generator>(*node.state, layout_);
  // restore_durable_bound (durable.cpp): what pg_snowflake/ says.
  bound::OnDisk disk;
  disk.state_file = node.state_file;
  disk.state_until = node.storage_bound;
  disk.state_durable = node.storage_durable;
  // The state file records its writer's system identifier (version 2); the
  // mutant trusts another system's as one that cannot say (version 1).
  disk.state_writer = !node.state_foreign ? bound::Writer::kThisSystem
                      : config_.mutant == Mutant::kForeignStateTrusted
                          ? bound::Writer::kNotRecorded
                          : bound::Writer::kOtherSystem;
  disk.marks = node.marks;
  disk.given = node.given;
  disk.given_until = node.given_bound;
  const bound::Start start = bound::at_start(disk);
  node.state_file = start.written.state_file;
  node.storage_bound = start.written.until;
  node.storage_durable = start.written.durable;
  node.bound_state = start.state;
  node.generator->restore(start.written.until);
  node.origin_consulted = false;
  // A copy of the state file as a backup would take it now.
  node.saved = node.state_file;
  node.saved_file = written(node);
  node.saved_at_us = now_;
  // The registry worker sets up the replication origin once the bound is
  // known (bound_register.cpp).
  schedule(rng_.range(100000, 1000000), EventKind::kEstablish, node.index, 0, node.incarnation, 0);
  // Another system's state file: the start marks why (durable.cpp), and the
  // node's own state file is written over it once an operator gives the bound.
  if (start.reason == bound::Reason::kForeignStateFile) node.marks = true;
  node.state_foreign = false;
  if (start.take_given) {
    node.marks = false;
    node.given = false;
  }
  if (start.remove_vouches) node.vouched = false;
  // The check of the databases (bound_check.cpp) runs in the worker.
  if (node.bound_state == bound::State::kChecking)
    schedule(rng_.range(500000, 2000000), EventKind::kCheckDone, node.index, 0, node.incarnation,
             0);
  // An operator drops the extension and creates it again before the check
  // has concluded.
  if (node.drop_create) {
    node.drop_create = false;
    schedule(rng_.range(0, 400000), EventKind::kDropCreate, node.index, 0, node.incarnation, 0);
  }
  // The View is shared memory, so lost; pg_snowflake/registry stays.
  node.round = registry_round::begin(round_settings(node));
  node.round.history = node.history;
  node.request = 0;
  schedule(0, EventKind::kWorkerTick, node.index, 0, node.incarnation, 0);
  // Every backend reads the carrier before its first ID (carrier.cpp).
  node.carrier_covered.assign(static_cast<size_t>(config_.backends), 0);
  if (node.dump_pending) restore_dump(node);
  for (int b = 0; b < config_.backends; b++)
    schedule(rng_.range(0, 10000), EventKind::kBackendCheck, node.index, b, node.incarnation, 0);
}

void World::stop(Node& node) {
  node.up = false;
  node.incarnation++;
}

// registered_node() (lease.cpp): lease::may_issue on the View, for the
// configured node field or (automatic) whichever the View leased. A bound not
// known refuses here: make_durable (bound::may_make_durable) would refuse the
// first ID after a start, whose unit is always at or past the bound restored.
void World::backend_check(Node& node, int b) {
  const lease::Grant grant = registry_round::grant(node.round);
  if (!bound::may_make_durable(node.bound_state) ||
      (!node.registryless &&
       lease::may_issue(grant, mono(node), node.configured) != lease::Verdict::kAllowed)) {
    schedule(rng_.range(5000, 50000), EventKind::kBackendCheck, node.index, b, node.incarnation, 0);
    return;
  }
  node.backends[static_cast<size_t>(b)].node = node_field(node);
  // cross_gap (lease.cpp): once the node's IDs may reach the gap after a change
  // of the registry's history, the generator goes on at its end.
  if (grant.gap_until > 0) {
    const int64_t last = layout_.timestamp_of(node.state->last_id.load());
    const int64_t reach =
        layout_.timestamp_from_unix_ms(node.wall.at(now_) / 1000 + max_lead_ms_) + 1;
    if (lease::must_cross_gap(grant, last, reach)) {
      node.generator->raise_floor(grant.gap_until);
      figures_.history_gaps++;
    }
  }
  schedule(step_delay(node), EventKind::kBackendReserve, node.index, b, node.incarnation, 0);
}

// issue() (issue.cpp): Generator::reserve, the durable bound, the waits. A
// backend paused inside reserve(), between its clock reading and its
// compare-and-swap, is reserve() on a copy of the shared state whose CAS
// (backend_cas) is tried on the real state after the pause.
void World::backend_reserve(Node& node, int b) {
  Policy policy;
  policy.max_lead_ms = max_lead_ms_;
  policy.clock_wait_budget_ms = 1000;
  const int64_t wanted = rng_.range(1, 3);
  const bool pause = node.stall_next > 0 && rng_.chance(0.5);
  GeneratorState copy;
  Generator copied(copy, layout_);
  if (pause) {
    copy.last_id.store(node.state->last_id.load());
    copy.durable_until.store(node.state->durable_until.load());
    copy.clock_high_water.store(node.state->clock_high_water.load());
  }
  Generator& generator = pause ? copied : *node.generator;
  const int64_t field = node.backends[static_cast<size_t>(b)].node;
  const Outcome outcome = generator.reserve(wall_ms(node), field, wanted, policy);
  switch (outcome.step) {
    case Step::kIssued: {
      Backend run{field, outcome.first_id, outcome.count, outcome.timestamp, 0, 0};
      if (pause) {
        run.expected_last = node.state->last_id.load();
        run.new_last = copy.last_id.load();
        node.backends[static_cast<size_t>(b)] = run;
        schedule(step_delay(node), EventKind::kBackendCas, node.index, b, node.incarnation, 0);
        return;
      }
      reserved(node, b, run);
      return;
    }
    case Step::kNeedDurable: {
      // make_durable (durable.cpp): before the first ID of the start, the
      // replication origin (bound_register.cpp), which may raise the floor:
      // the reservation is made again.
      if (!node.origin_consulted) {
        consult_origin(node);
        schedule(0, EventKind::kBackendReserve, node.index, b, node.incarnation, 0);
        return;
      }
      // The origin raised, the WAL record and state file, then the generator
      // may issue up to the bound. A crash before it is done loses it.
      const int64_t until = node.generator->durable_until_after(outcome.timestamp);
      // A promoted synchronous standby no longer confirms the old primary's
      // records: its wait for the standby never ends.
      if (node.registryless && node.zombie && config_.mutant != Mutant::kNoSyncWait) return;
      if (config_.mutant == Mutant::kNoDurable) {
        node.generator->publish_durable(until);
        schedule(0, EventKind::kBackendReserve, node.index, b, node.incarnation, 0);
        return;
      }
      schedule(rng_.range(500, 5000), EventKind::kDurableDone, node.index, b, node.incarnation,
               until);
      return;
    }
    case Step::kWaitForSequence:
    case Step::kWaitForClock:
      schedule((outcome.wait_until - outcome.clock) * 1000 + 1, EventKind::kBackendReserve,
               node.index, b, node.incarnation, 0);
      return;
    default:  // kClockBehind and the rest: an error; the session tries again later
      figures_.refused++;
      schedule(rng_.range(50000, 200000), EventKind::kBackendCheck, node.index, b, node.incarnation,
               0);
      return;
  }
}

void World::backend_cas(Node& node, int b) {
  Backend& run = node.backends[static_cast<size_t>(b)];
  int64_t expected = run.expected_last;
  if (!node.state->last_id.compare_exchange_strong(expected, run.new_last)) {
    schedule(0, EventKind::kBackendReserve, node.index, b, node.incarnation, 0);
    return;
  }
  reserved(node, b, run);
}

// The CAS succeeded: the IDs are this backend's, checked against the View
// before they are returned (backend_confirm).
void World::reserved(Node& node, int b, const Backend& run) {
  if (run.first_id <= node.last_cas_id) {
    figures_.order_violations++;
    note("node " + node.self.host + " CAS'd ID " + std::to_string(run.first_id) + " after " +
         std::to_string(node.last_cas_id));
  }
  node.last_cas_id = run.first_id + (run.count - 1) * layout_.sequence_step();
  Backend& backend = node.backends[static_cast<size_t>(b)];
  backend = run;
  if (config_.mutant == Mutant::kNoConfirm) {
    emit(node, backend);
    schedule(rng_.exponential(config_.gap_ms * 1000), EventKind::kBackendCheck, node.index, b,
             node.incarnation, 0);
    return;
  }
  schedule(step_delay(node), EventKind::kBackendConfirm, node.index, b, node.incarnation, 0);
}

bound::Written World::written(const Node& node) const {
  return {node.storage_bound, node.state_file, node.storage_durable};
}

// write_bound (durable.cpp): bound::to_write's bound, the origin raised to it
// (if it has a state), then the WAL record and the state file.
void World::write_bound(Node& node, int64_t until) {
  until = bound::to_write(until, written(node));
  if (node.origin) node.origin_bound = std::max(node.origin_bound, until);
  if (!node.state_file) node.vouched = false;
  node.storage_bound = std::max(node.storage_bound, until);
  node.storage_durable = std::max(node.storage_durable, node.storage_bound);
  node.state_file = true;
}

// consult_register (bound_register.cpp): once per start, what the origin's
// value changes (bound::at_origin). The mutant never reads it.
void World::consult_origin(Node& node) {
  node.origin_consulted = true;
  if (config_.mutant == Mutant::kOriginNotConsulted) return;
  const bound::FromOrigin from =
      bound::at_origin(node.bound_state, written(node), node.origin, node.origin_bound);
  if (from.finding == bound::Finding::kNothing) return;
  if (from.finding == bound::Finding::kStateFileOlder)
    figures_.older_files_found++;
  else
    figures_.origin_answers++;
  node.generator->restore(from.written.until);
  node.storage_bound = from.written.until;
  node.storage_durable = from.written.durable;
  node.state_file = true;
  if (from.remove_vouches) node.vouched = false;
  node.bound_state = from.state;
}

// The "snowflake bound register" worker (bound_register.cpp): the origin's
// first state, the durable bound in force, once the bound is known.
void World::establish_origin(Node& node) {
  if (node.origin || !node.origin_slots || node.zombie) return;
  if (node.bound_state != bound::State::kKnown) {
    schedule(1000000, EventKind::kEstablish, node.index, 0, node.incarnation, 0);
    return;
  }
  node.origin = true;
  node.origin_bound = bound::origin_value(written(node));
  // Its record reaches the standby (at once here).
  node.replayed_origin = true;
  node.replayed_origin_bound = std::max(node.replayed_origin_bound, node.origin_bound);
}

void World::durable_done(Node& node, int b, int64_t until) {
  // Its synchronous standby promoted meanwhile, the wait never ends.
  if (node.registryless && node.zombie && config_.mutant != Mutant::kNoSyncWait) return;
  write_bound(node, until);
  until = std::max(until, node.storage_bound);
  node.generator->publish_durable(until);
  // Streaming replication: the standby replays the bound record a little
  // later; a synchronous one (a node without the registry) before the bound is
  // used (durable.cpp, wait_for_synchronous_standbys).
  if (node.registryless && config_.mutant != Mutant::kNoSyncWait) {
    node.replayed = bound::at_replay(node.replayed, bound::State::kKnown, until).written;
    if (node.origin) {
      node.replayed_origin = true;
      node.replayed_origin_bound = std::max(node.replayed_origin_bound, until);
    }
  } else {
    schedule(rng_.range(100, 50000), EventKind::kReplay, node.index, 0, node.origin ? 1 : 0, until);
  }
  schedule(0, EventKind::kBackendReserve, node.index, b, node.incarnation, 0);
}

// confirm_registered_node (lease.cpp): lease::may_return on the View.
void World::backend_confirm(Node& node, int b) {
  const Backend& backend = node.backends[static_cast<size_t>(b)];
  lease::Grant grant = registry_round::grant(node.round);
  if (config_.mutant == Mutant::kNoFloorCheck) grant.floor = 0;
  if (node.registryless) {
    if (carry(node, b)) emit(node, backend);
  } else {
    const lease::Verdict verdict =
        lease::may_return(grant, mono(node), backend.node, backend.timestamp);
    if (verdict == lease::Verdict::kAllowed) {
      if (carry(node, b)) emit(node, backend);
    } else {
      // A race with cross_gap: the next reservation lies above the gap.
      if (verdict == lease::Verdict::kInGap) node.generator->raise_floor(grant.gap_until);
      figures_.refused++;
    }
  }
  schedule(rng_.exponential(config_.gap_ms * 1000), EventKind::kBackendCheck, node.index, b,
           node.incarnation, 0);
}

void World::emit(const Node& node, const Backend& backend) {
  for (int64_t i = 0; i < backend.count; i++)
    issued_.push_back({backend.first_id + i * layout_.sequence_step(), node.index});
  figures_.ids += static_cast<uint64_t>(backend.count);
}

void World::note(const std::string& what) {
  if (figures_.first_violation.empty())
    figures_.first_violation = "at " + std::to_string(now_ / 1000) + " ms: " + what;
}

void World::dispatch(const Event& event) {
  Node& node = *nodes_[static_cast<size_t>(event.node)];
  const bool live = node.up && event.incarnation == node.incarnation;
  switch (event.kind) {
    case EventKind::kBackendCheck:
      if (live) backend_check(node, event.backend);
      break;
    case EventKind::kBackendReserve:
      if (live) backend_reserve(node, event.backend);
      break;
    case EventKind::kBackendCas:
      if (live) backend_cas(node, event.backend);
      break;
    case EventKind::kDurableDone:
      if (live) durable_done(node, event.backend, event.a);
      break;
    case EventKind::kBackendConfirm:
      if (live) backend_confirm(node, event.backend);
      break;
    case EventKind::kWorkerTick:
      if (live) worker_tick(node);
      break;
    case EventKind::kWorkerDeadline:
      if (live) worker_deadline(node, static_cast<uint64_t>(event.a));
      break;
    case EventKind::kWorkerReply:
      if (live) worker_reply(node, static_cast<size_t>(event.a));
      break;
    case EventKind::kRegistryClaim:  // reaches the registry whatever became of the node
      registry_claim(static_cast<size_t>(event.a));
      break;
    case EventKind::kRegistryPick:
      registry_pick(static_cast<size_t>(event.a));
      break;
    case EventKind::kWorkerPicked:
      if (live) worker_picked(node, static_cast<size_t>(event.a));
      break;
    case EventKind::kRegistryRelease:
      registry_release(static_cast<size_t>(event.a));
      break;
    case EventKind::kReplay:
      // redo (bound_wal.cpp): the standby keeps the record in its state file,
      // and the origin's advance before it (`incarnation`: the primary's
      // origin had a state).
      node.replayed = bound::at_replay(node.replayed, bound::State::kKnown, event.a).written;
      if (event.incarnation != 0) {
        node.replayed_origin = true;
        node.replayed_origin_bound = std::max(node.replayed_origin_bound, event.a);
      }
      break;
    case EventKind::kStart:
      if (!node.up && !node.zombie) start(node);
      break;
    case EventKind::kOperatorBound:
      operator_bound(node, event.a);
      break;
    case EventKind::kZombieDeath:
      stop(node);
      break;
    case EventKind::kRegistrySnapshot:
      snapshots_.emplace_back(now_, rows_);
      while (snapshots_.front().first < now_ - lease_us_) snapshots_.pop_front();
      schedule(100000, EventKind::kRegistrySnapshot, 0, 0, 0, 0);
      break;
    case EventKind::kCheckDone:
      if (live) check_done(node);
      break;
    case EventKind::kDropCreate:
      if (live) drop_create(node);
      break;
    case EventKind::kEstablish:
      if (live) establish_origin(node);
      break;
    case EventKind::kFault:
      inject_fault();
      schedule_fault();
      break;
  }
}

Figures World::run() {
  const int64_t end = config_.duration_ms * 1000;
  while (!queue_.empty() && queue_.top().at_us <= end) {
    const Event event = queue_.top();
    queue_.pop();
    now_ = event.at_us;
    figures_.events++;
    dispatch(event);
  }
  figures_.node_hours = static_cast<double>(config_.nodes) * static_cast<double>(end) / 3.6e9;
  // Every issued ID against every other: sorted, equal neighbours are duplicates.
  std::sort(issued_.begin(), issued_.end());
  for (size_t i = 1; i < issued_.size(); i++) {
    if (issued_[i].first != issued_[i - 1].first) continue;
    figures_.duplicates++;
    const Node& a = *nodes_[static_cast<size_t>(issued_[i - 1].second)];
    const Node& b = *nodes_[static_cast<size_t>(issued_[i].second)];
    const std::string what = "ID " + std::to_string(issued_[i].first) + " issued by " +
                             a.self.host + " (timeline " + std::to_string(a.self.timeline) +
                             ") and " + b.self.host + " (timeline " +
                             std::to_string(b.self.timeline) + ")";
    if (figures_.duplicates == 1) figures_.first_violation = "duplicate " + what;
  }
  return figures_;
}

Figures run(const Config& config) {
  World world(config);
  return world.run();
}

}  // namespace snowflake::sim
