// Faults: which, where and when, drawn from the seed (sim.hpp lists the
// kinds; doc/simulation.md says how large each is).
#include <algorithm>
#include <cstdio>

#include "simulation.hpp"

namespace snowflake::sim {

const char* fault_name(int fault) {
  static const char* const names[kFaultKinds] = {
      "crash",  "restart",    "step-forward", "step-back",   "slew",      "partition",
      "outage", "lost-reply", "late-message", "stall",       "promotion", "restore",
      "clone",  "upgrade",    "stale-state",  "drop-create", "recreate"};
  return fault >= 0 && fault < kFaultKinds ? names[fault] : "?";
}

namespace {

const char* const kMutantNames[] = {"none",
                                    "no-floor",
                                    "no-durable",
                                    "no-confirm",
                                    "no-floor-check",
                                    "no-cap-report",
                                    "stale-release",
                                    "no-token",
                                    "upgrade-without-mark",
                                    "vouch-on-create",
                                    "no-drop-mark",
                                    "no-sync-wait",
                                    "foreign-state-trusted",
                                    "no-history-defence",
                                    "no-history-gap",
                                    "no-dump-adoption",
                                    "origin-not-consulted"};

}  // namespace

bool parse_mutant(const std::string& name, Mutant* mutant) {
  for (int i = 0; i < static_cast<int>(sizeof(kMutantNames) / sizeof(kMutantNames[0])); i++) {
    if (name == kMutantNames[i]) {
      *mutant = static_cast<Mutant>(i);
      return true;
    }
  }
  return false;
}

const char* mutant_name(Mutant mutant) {
  return kMutantNames[static_cast<int>(mutant)];
}

void World::schedule_fault() {
  const double per_us =
      static_cast<double>(config_.nodes) * config_.faults_per_node_minute / 60000000.0;
  if (per_us <= 0) return;
  schedule(rng_.exponential(static_cast<int64_t>(1 / per_us)), EventKind::kFault, 0, 0, 0, 0);
}

// snowflake_restore_bound / snowflake_set_bound: the operator gives the bound
// the original data directory had (bound_functions.cpp, adopt_bound).
// The operator calls it on the running server when it refuses IDs for an
// unknown bound: while it is down or still checking, later; once it knows
// its bound, never.
void World::operator_bound(Node& node, int64_t given) {
  if (node.zombie) return;
  if (!node.up || node.bound_state == bound::State::kChecking) {
    schedule(1000000, EventKind::kOperatorBound, node.index, 0, 0, given);
    return;
  }
  if (node.bound_state == bound::State::kKnown) return;
  figures_.operator_bounds++;
  adopt(node, given);
}

// adopt_bound (durable.cpp): the bound written, in WAL (the standby replays
// it) and the state file, and known from then on.
void World::adopt(Node& node, int64_t given) {
  // consult_register first; never below the origin (this data directory's
  // own IDs, which marks kept the start from taking).
  if (!node.origin_consulted) consult_origin(node);
  const int64_t origin = node.origin ? node.origin_bound : 0;
  write_bound(node, bound::adopted(std::max(given, origin), written(node)));
  node.replayed = bound::at_replay(node.replayed, bound::State::kKnown, node.storage_bound).written;
  if (node.origin) {
    node.replayed_origin = true;
    node.replayed_origin_bound = std::max(node.replayed_origin_bound, node.storage_bound);
  }
  if (node.up) node.generator->restore(node.storage_bound);
  if (bound::answers_marks(node.bound_state)) node.marks = false;
  node.bound_state = bound::State::kKnown;
}

// note_extension_created and mark_bound_unknown (bound_origin.cpp): what a
// creation records.
void World::created(Node& node, bound::Creation creation) {
  switch (creation) {
    case bound::Creation::kMarkUnknown:
      node.marks = true;
      if (node.bound_state != bound::State::kKnown) node.bound_state = bound::State::kUnknown;
      break;
    case bound::Creation::kWriteStateFile:
      adopt(node, node.storage_bound);
      break;
    case bound::Creation::kVouch:
      node.vouched = true;
      break;
    case bound::Creation::kNothing:
    case bound::Creation::kStaysUnknown:
      break;
  }
}

// conclude_bound_check (bound_origin.cpp): the extension is in a database,
// unless a creation while nothing could be issued vouched for it.
void World::check_done(Node& node) {
  if (node.bound_state != bound::State::kChecking) return;
  // The first database's asker consults the replication origin
  // (bound_check.cpp answer_here): with a state it gives the bound.
  if (!node.origin_consulted) consult_origin(node);
  if (node.bound_state != bound::State::kChecking) return;
  node.bound_state = bound::after_check(node.bound_state, !node.vouched);
  if (node.bound_state == bound::State::kUnknown) node.marks = true;
}

// DROP EXTENSION (the object access hook: bound_origin.cpp), then CREATE
// EXTENSION (note_extension_created), before the check has concluded or the
// operator has given the bound.
void World::drop_create(Node& node) {
  figures_.faults[kDropCreate]++;
  if (config_.mutant != Mutant::kNoDropMark && bound::drop_marks_unknown(node.bound_state))
    created(node, bound::Creation::kMarkUnknown);  // mark_bound_unknown, as a drop marks
  node.vouched = false;                            // a vouch names the dropped extension's OID
  bound::Creation creation = bound::at_creation(false, node.bound_state, node.state_file);
  if (config_.mutant == Mutant::kVouchOnCreate && creation == bound::Creation::kStaysUnknown)
    creation = bound::Creation::kWriteStateFile;
  created(node, creation);
}

// Half the time a restore or an upgrade runs on a new server (the data
// directory moved there), whose wall clock is any node's: within a second of
// the true time.
void World::new_server(Node& node) {
  if (!rng_.chance(0.5)) return;
  node.wall.base_true_us = now_;
  node.wall.base_us = kStartUs + now_ + rng_.range(-wall_spread_us(), wall_spread_us());
  node.wall.rate_ppm = rng_.range(-200, 200);
}

// pg_upgrade into a new data directory (a new system identifier): the old
// cluster shut down cleanly (the release, the exact bound), the new one made
// by initdb, or tried out first (a state file of its own), half the time with
// Debian's pg_upgradecluster hook, which copies the old state file to
// pg_snowflake/given. pg_upgrade's server creates the extension in
// binary-upgrade mode; then the new cluster starts, 0.2 to 2 s after the
// old one stopped. If it refuses IDs, the operator gives the old data
// directory's bound.
void World::upgrade(Node& node) {
  release(node);
  const int64_t exact = bound::exact_at_shutdown(layout_, node.state->last_id.load(),
                                                 node.state->durable_until.load());
  if (exact != 0) node.storage_bound = exact;
  stop(node);
  const int64_t old_bound = node.storage_bound;
  node.original_bound = std::max(node.original_bound, old_bound);
  // The hook (debian/pg_upgradecluster-hook) copies the old state file only
  // if there is one and the old cluster's bound is not marked unknown.
  const bool hook = rng_.chance(0.5) && node.state_file && !node.marks;
  const bool tried_out = rng_.chance(0.5);
  node.self.system_identifier += "u";
  node.self.timeline = 1;
  const registry_history::Memory history = node.history;
  node.empty_snowflake_directory();
  if (config_.nodes_knew_registry) node.history = history;
  // pg_upgrade carries no replication origin (the new cluster's own, if it
  // was tried out, holds no more than the empty bound it wrote).
  node.origin = false;
  node.origin_bound = 0;
  node.replayed_origin = false;
  node.replayed_origin_bound = 0;
  node.state_file = tried_out;
  node.given = hook;
  node.given_bound = old_bound;
  // pg_upgrade's server: it does not take pg_snowflake/given.
  bound::OnDisk disk;
  disk.state_file = node.state_file;
  disk.state_until = node.storage_bound;
  const bound::Start start = bound::at_start(disk);
  node.bound_state = start.state;
  created(node, bound::at_creation(config_.mutant != Mutant::kUpgradeWithoutMark, start.state,
                                   start.written.state_file));
  node.drop_create = rng_.chance(0.5);
  new_server(node);
  schedule(rng_.range(200000, 2000000), EventKind::kStart, node.index, 0, 0, 0);
  schedule(rng_.range(1000000, 10000000), EventKind::kOperatorBound, node.index, 0, 0,
           node.original_bound);
}

// A clean stop (the release, the exact bound) or a crash; the copy of
// pg_snowflake/state taken at the node's last start put back (after a crash,
// half the time crash recovery replays the bound records since the last
// checkpoint over it); the wall clock back at the time of the copy (at most
// 10 s), so that the IDs issued since would be issued again; a start.
void World::stale_state(Node& node) {
  const bool crash = rng_.chance(0.5);
  if (!crash) {
    release(node);
    const int64_t exact = bound::exact_at_shutdown(layout_, node.state->last_id.load(),
                                                   node.state->durable_until.load());
    if (exact != 0) node.storage_bound = exact;
  }
  stop(node);
  const bound::Written current = written(node);
  node.state_file = node.saved_file.state_file;
  node.storage_bound = node.saved_file.until;
  node.storage_durable = node.saved_file.durable;
  if (crash && rng_.chance(0.5)) {
    node.storage_bound = std::max(node.storage_bound, current.until);
    node.storage_durable = std::max(node.storage_durable, current.durable);
    node.state_file = true;
  }
  node.wall.rebase(now_);
  node.wall.base_us -= std::min<int64_t>(now_ - node.saved_at_us, 10000000);
  schedule(rng_.range(200000, 2000000), EventKind::kStart, node.index, 0, 0, 0);
}

void World::inject_fault() {
  if (active_.empty()) return;
  Node& node = *nodes_[static_cast<size_t>(active_[rng_.next() % active_.size()])];
  // --dump-restores: drawn apart, so that the other faults of a seed stay
  // those it draws without the flag.
  if (config_.dump_restores && rng_.chance(0.1)) {
    if (node.up) dump_restore(node);
    return;
  }
  // Every kind but drop-create, which follows restores and upgrades, and
  // recreate, which replaces outages.
  int fault = static_cast<int>(rng_.range(0, kDropCreate - 1));
  const bool up = node.up;
  switch (fault) {
    case kCrash:
      // Every process killed; half the time a backend's crash only, after
      // which the postmaster reinitializes (its token stays).
      if (!up) return;
      node.same_postmaster = rng_.chance(0.5);
      stop(node);
      schedule(rng_.range(100000, 3000000), EventKind::kStart, node.index, 0, 0, 0);
      break;
    case kRestart: {
      if (!up) return;
      release(node);
      // save_exact_bound (durable.cpp): every backend is gone.
      const int64_t exact = bound::exact_at_shutdown(layout_, node.state->last_id.load(),
                                                     node.state->durable_until.load());
      if (exact != 0) node.storage_bound = exact;
      stop(node);
      schedule(rng_.range(200000, 2000000), EventKind::kStart, node.index, 0, 0, 0);
      break;
    }
    case kStepForward:
      if (config_.clocks_in_step) return;
      node.wall.rebase(now_);
      node.wall.base_us += rng_.range(100000, 30000000);
      break;
    case kStepBack:
      if (config_.clocks_in_step) return;
      node.wall.rebase(now_);
      node.wall.base_us -= rng_.range(100000, 10000000);
      break;
    case kSlew:
      if (config_.clocks_in_step) return;
      node.wall.rebase(now_);
      node.wall.rate_ppm = rng_.range(-500, 500);
      break;
    case kPartition:
      node.partitioned_until = now_ + rng_.range(lease_us_ / 2, 3 * lease_us_);
      break;
    case kOutage:
      // The registry's outages come at the rate of 50 nodes' draws, however
      // many nodes there are (every 20th draw with 1,000 nodes).
      if (++outage_draws_ % std::max(1, config_.nodes / 50) != 0) return;
      outage_until_ = std::max(outage_until_, now_ + rng_.range(lease_us_ / 2, 2 * lease_us_));
      if (config_.registry_recreated && rng_.chance(0.5)) {
        // Its database or table dropped and made again (by hand, or by a
        // worker that finds it missing): empty, another OID. Its standby has
        // the same.
        for (registry_row::Row& row : rows_) row = registry_row::Row{};
        registry_.table++;
        snapshots_.clear();
        fault = kRecreate;
      } else if (config_.registry_loses_commits && !snapshots_.empty()) {
        // A failover to an asynchronous standby: the rows as they were, on
        // its next timeline (or, in place, the same one: a snapshot started
        // as it was).
        const int64_t lag = rng_.range(100000, lease_us_);
        auto snapshot = snapshots_.begin();
        for (auto it = snapshots_.begin(); it != snapshots_.end() && it->first <= now_ - lag; ++it)
          snapshot = it;
        rows_ = snapshot->second;
        if (!config_.registry_reverts_in_place) registry_.timeline++;
        figures_.registry_reverts++;
      }
      break;
    case kLostReply:
      node.lose_next_reply = true;
      break;
    case kLateMessage:
      node.delay_next_message = true;
      break;
    case kStall:
      node.stall_next = static_cast<int>(rng_.range(1, 3));
      break;
    case kPromotion: {
      // The standby, with the bound it replayed, in the node's place; the old
      // primary (if it still runs) is fenced by the registry, then dies.
      node.zombie = true;
      active_.erase(std::find(active_.begin(), active_.end(), node.index));
      schedule(rng_.range(0, 3 * lease_us_), EventKind::kZombieDeath, node.index, 0, 0, 0);
      const bound::Written replayed = node.replayed;
      Node& standby = add_node(node.configured, node.self.system_identifier, node.self.timeline + 1,
                               node.self.host + "s");
      standby.registryless = node.registryless;
      if (standby.registryless) figures_.registryless_nodes++;
      standby.state_file = replayed.state_file;
      standby.storage_bound = replayed.until;
      standby.storage_durable = replayed.durable;
      standby.replayed = replayed;
      standby.origin_slots = node.origin_slots;
      standby.origin = node.replayed_origin;
      standby.origin_bound = node.replayed_origin_bound;
      standby.replayed_origin = node.replayed_origin;
      standby.replayed_origin_bound = node.replayed_origin_bound;
      // What the primary's pg_snowflake/ held when the standby was made.
      standby.marks = node.marks;
      standby.vouched = node.vouched;
      standby.history = node.history;  // pg_snowflake/registry, copied with the data directory
      standby.original_bound = std::max(node.original_bound, node.storage_bound);
      standby.carrier = node.carrier;  // in its database, by the generic WAL it replayed
      standby.carrier_system = node.carrier_system;
      if (standby.marks)
        schedule(rng_.range(1000000, 10000000), EventKind::kOperatorBound, standby.index, 0, 0,
                 standby.original_bound);
      schedule(rng_.range(0, 1000000), EventKind::kStart, standby.index, 0, 0, 0);
      break;
    }
    case kRestore:
      // A point-in-time restore (a new timeline) without pg_snowflake/: no
      // ID until the operator gives the original's bound.
      if (up) stop(node);
      node.self.timeline++;
      schedule(rng_.range(500000, 3000000), EventKind::kStart, node.index, 0, 0, 0);
      node.original_bound = std::max(node.original_bound, node.storage_bound);
      schedule(rng_.range(1000000, 10000000), EventKind::kOperatorBound, node.index, 0, 0,
               node.original_bound);
      {
        const registry_history::Memory history = node.history;
        node.empty_snowflake_directory();
        if (config_.nodes_knew_registry) node.history = history;
      }
      // A quarter of the restores carry the replication origin (pg_logical/
      // with the data: it gives the bound); the rest come without it (as
      // 1.7's data directories, or a tool that skips pg_logical/ too): the
      // check of the databases and the operator.
      if (!rng_.chance(0.25)) {
        node.origin = false;
        node.origin_bound = 0;
      }
      node.drop_create = rng_.chance(0.5);
      if (config_.foreign_state_files && rng_.chance(0.5)) {
        const Node& other = *nodes_[static_cast<size_t>(rng_.next() % nodes_.size())];
        if (other.self.system_identifier != node.self.system_identifier) {
          node.state_file = other.state_file;
          node.state_foreign = other.state_file;
          node.storage_bound = other.storage_bound;
          node.storage_durable = other.storage_durable;
          node.marks = other.marks;
          figures_.foreign_states++;
        }
      }
      new_server(node);
      break;
    case kClone: {
      // Its data directory as a snapshot has it (the durable bound), started
      // beside the running original by another postmaster: a clone in the
      // same place, or a restored backup that ended recovery on a new
      // timeline elsewhere. It runs for a while, then is stopped for good.
      // (Not of a node without the registry: beside its original, under its
      // worker_id, nothing keeps it apart, as README says.)
      if (!up || node.registryless) return;
      const bool restored = rng_.chance(0.5);
      Node& copy = add_node(node.configured, node.self.system_identifier,
                            node.self.timeline + (restored ? 1 : 0),
                            restored ? node.self.host + "r" : node.self.host);
      active_.pop_back();  // faults do not hit it: it only runs beside the original
      copy.clone_of = node.index;
      copy.state_file = node.state_file;
      copy.state_foreign = node.state_foreign;
      copy.storage_bound = node.storage_bound;
      copy.storage_durable = node.storage_durable;
      copy.origin_slots = node.origin_slots;
      copy.origin = node.origin;
      copy.origin_bound = node.origin_bound;
      copy.marks = node.marks;
      copy.history = node.history;
      copy.carrier = node.carrier;
      copy.carrier_system = node.carrier_system;
      figures_.clones++;
      schedule(rng_.range(0, 1000000), EventKind::kStart, copy.index, 0, 0, 0);
      schedule(rng_.range(lease_us_, 6 * lease_us_), EventKind::kZombieDeath, copy.index, 0, 0, 0);
      break;
    }
    case kUpgrade:
      if (!up) return;
      upgrade(node);
      break;
    case kStaleState:
      // Only where the origin has a state (doc/simulation.md): without one,
      // the node trusts the older file as 1.7 did.
      if (!up || !node.saved || !node.origin) return;
      stale_state(node);
      break;
    default:
      return;
  }
  figures_.faults[fault]++;
  if (config_.trace)
    std::printf("  %9.3f s  %-12s %s (timeline %lld)\n", static_cast<double>(now_) / 1e6,
                fault_name(fault), node.self.host.c_str(),
                static_cast<long long>(node.self.timeline));
}

}  // namespace snowflake::sim

// The dump's carrier of the bound (issue 44, branch h-carrier) ---------------

namespace snowflake::sim {

// carry() (carrier.cpp): before a backend returns its run at or past the
// carrier it last read, it reads the row; another cluster's row above the
// node's written bound is taken as the bound first, and a run reserved
// below it dropped; then the row is raised to the written bound, as this
// cluster's. The mutant takes nothing.
bool World::carry(Node& node, int b) {
  const Backend& backend = node.backends[static_cast<size_t>(b)];
  int64_t& covered = node.carrier_covered[static_cast<size_t>(b)];
  const int64_t last = backend.first_id + (backend.count - 1) * layout_.sequence_step();
  if (last < covered) return true;
  const int64_t elsewhere = node.carrier_system != node.self.system_identifier ? node.carrier : 0;
  carrier::AfterRead after =
      carrier::after_read(layout_, node.storage_bound, node.carrier, elsewhere, backend.first_id);
  if (config_.mutant == Mutant::kNoDumpAdoption && after.adopt) {
    after = carrier::after_read(layout_, node.storage_bound, node.carrier, 0, backend.first_id);
  }
  if (after.adopt) {
    figures_.dump_adoptions++;
    adopt(node, after.adopt_until);
  }
  if (after.raise_to > node.carrier) {
    node.carrier = after.raise_to;
    node.carrier_system = node.self.system_identifier;
  }
  covered = after.covered_below;
  return !after.reserve_again;
}

// pg_dump of the node's database, the node stopped for good, and the dump
// restored (pg_restore, as a superuser) into a new cluster on another server
// with the same identity: a new system identifier, pg_snowflake/ new. Half
// the time the restore runs once the new cluster knows its bound (its check
// found no extension; the creation wrote its state file), half the time
// while it still checks (the creation vouches). The dump holds the carrier
// as the stopped node left it.
void World::dump_restore(Node& node) {
  release(node);
  const int64_t exact = bound::exact_at_shutdown(layout_, node.state->last_id.load(),
                                                 node.state->durable_until.load());
  if (exact != 0) node.storage_bound = exact;
  stop(node);
  node.dump_pending = true;
  node.dump_carrier = node.carrier;
  node.dump_system = node.carrier_system;
  node.self.system_identifier += "d";
  node.self.timeline = 1;
  node.empty_snowflake_directory();
  // A new cluster (initdb): no replication origin of the bound yet either.
  node.origin = false;
  node.origin_bound = 0;
  node.replayed_origin = false;
  node.replayed_origin_bound = 0;
  node.carrier = 0;
  node.carrier_system.clear();
  const bool known = rng_.chance(0.5);
  node.state_file = known;
  node.vouched = !known;
  new_server(node);
  figures_.dump_restores++;
  schedule(rng_.range(200000, 2000000), EventKind::kStart, node.index, 0, 0, 0);
}

// The restore's COPY into snowflake_dump_bound (its trigger, carrier.cpp),
// before the database's first ID: the restored row raises the node's bound
// where it is known (adopt_bound), else the generator's floor, and is merged
// into the row the creation made (the restored cluster's once taken, the
// old cluster's while this one's bound is not known). The mutant merges it
// as this cluster's, takes nothing, and the first ID does not either.
void World::restore_dump(Node& node) {
  node.dump_pending = false;
  node.carrier = carrier::of_bound(layout_, node.storage_bound);  // CREATE EXTENSION's row
  node.carrier_system = node.self.system_identifier;
  const int64_t restored = node.dump_carrier;
  if (config_.mutant == Mutant::kNoDumpAdoption) {
    node.carrier = std::max(node.carrier, restored);
    return;
  }
  std::string system = node.self.system_identifier;
  if (carrier::admit(layout_, restored, node.storage_bound, true, wall_ms(node), max_lead_ms_) ==
      carrier::Admission::kTaken) {
    const int64_t until = carrier::bound_of(layout_, restored);
    if (node.bound_state == bound::State::kKnown) {
      adopt(node, until);
    } else {
      node.generator->raise_floor(until);
      system = node.dump_system;
    }
  }
  if (restored > node.carrier) {
    node.carrier = restored;
    node.carrier_system = system;
  }
}

}  // namespace snowflake::sim
