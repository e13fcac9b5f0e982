// The simulated world's parts: a deterministic random source, the nodes with
// their clocks, and the event queue. world.cpp runs them.
#pragma once

#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "bound.hpp"
#include "carrier.hpp"
#include "generator.hpp"
#include "lease.hpp"
#include "pick.hpp"
#include "registry_history.hpp"
#include "registry_round.hpp"
#include "registry_row.hpp"
#include "rng.hpp"
#include "sim.hpp"

namespace snowflake::sim {

// A clock that runs at (1 + rate_ppm / 10^6) times true time, and steps.
struct DriftingClock {
  int64_t base_true_us = 0;
  int64_t base_us = 0;
  int64_t rate_ppm = 0;
  int64_t at(int64_t true_us) const {
    return base_us + (true_us - base_true_us) + (true_us - base_true_us) * rate_ppm / 1000000;
  }
  void rebase(int64_t true_us) {
    base_us = at(true_us);
    base_true_us = true_us;
  }
};

struct Backend {
  int64_t node = -1;     // the node field the View leased when the backend checked
  int64_t first_id = 0;  // reserved, not yet confirmed
  int64_t count = 0;
  int64_t timestamp = 0;
  // Paused inside reserve(): the compare-and-swap still to do.
  int64_t expected_last = 0;
  int64_t new_last = 0;
};

struct Node {
  int index = 0;
  // The configured identity (worker_id: the registry row, also the node
  // field), or -1: automatic leasing picks one (the View's grant.node).
  int configured = -1;
  // No registry: the node field is `configured`'s in the last datacenter,
  // and a synchronous standby.
  bool registryless = false;
  registry_row::Holder self;
  uint64_t incarnation = 0;
  bool up = false;
  bool zombie = false;  // replaced by its promoted standby; dies soon
  // What shared memory says of the bound (bound::at_start and the rest decide).
  bound::State bound_state = bound::State::kKnown;
  int clone_of = -1;  // a clone or restored copy: the node it was copied from
  // The next start is the same postmaster's reinitialization after a
  // backend crashed (restart_after_crash): its token stays.
  bool same_postmaster = false;
  std::unique_ptr<GeneratorState> state;
  std::unique_ptr<Generator> generator;
  // pg_snowflake/: the state file (the durable bound, also in WAL, and from
  // version 3 the durable bound in force when it was written), the marks of
  // an unknown bound.
  bool state_file = true;
  int64_t storage_bound = 0;
  int64_t storage_durable = 0;
  // The replication origin snowflake_bound (bound_register.cpp): a durable
  // register that follows WAL and checkpoints, copied with the data directory
  // (clones, restores that keep pg_logical/, a standby's replay), not by
  // pg_upgrade. Set up once the bound is known, if the node has origin
  // states (max_replication_slots > 0).
  bool origin_slots = true;
  bool origin = false;  // it has a state
  int64_t origin_bound = 0;
  bool origin_consulted = false;  // this start (shared memory)
  // A copy of pg_snowflake/state taken at the node's last start (a backup's),
  // and whether the origin had a state then.
  bool saved = false;
  bound::Written saved_file;
  bool saved_with_origin = false;
  int64_t saved_at_us = 0;
  bool state_foreign = false;  // the state file was written by another system (until a start)
  bool marks = false;
  bool vouched = false;  // a vouch for the extension in place (pg_snowflake/created.*)
  bool given = false;    // pg_snowflake/given, from Debian's pg_upgradecluster hook
  int64_t given_bound = 0;
  // pg_snowflake/registry: what the node remembers of the registry's history
  // (src/pg/registry/history.cpp).
  registry_history::Memory history;
  // A data directory that arrives without pg_snowflake/ (a restore, a copy,
  // pg_upgrade's new cluster).
  void empty_snowflake_directory() {
    state_file = false;
    state_foreign = false;
    storage_bound = 0;
    storage_durable = 0;
    marks = false;
    vouched = false;
    given = false;
    history = registry_history::Memory{};
  }
  bool drop_create = false;          // the next start: DROP and CREATE EXTENSION before the check
  bound::Written replayed{0, true};  // its standby's state file, replayed with a lag
  bool replayed_origin = false;      // ... and its replication origin
  int64_t replayed_origin_bound = 0;
  int64_t original_bound = 0;  // the bound an operator gives after a restore without pg_snowflake/
  DriftingClock wall;          // µs since 1970
  DriftingClock mono;          // the lease clock
  // The registry worker: the round of src/core/registry_round.hpp (the View
  // is its published part), and the request in flight (0: none).
  registry_round::Round round;
  uint64_t request = 0;
  // Faults pending on this node.
  int64_t partitioned_until = 0;
  bool lose_next_reply = false;
  bool delay_next_message = false;
  int stall_next = 0;  // backend steps to stall
  std::vector<Backend> backends;
  int64_t last_cas_id = -1;  // every CAS of this data directory's lineage
  // The dump's carrier of the bound (src/pg/bound/carrier.cpp): the
  // database's snowflake_dump_bound row, the system identifier of the
  // cluster whose bound covers it, and what each backend last read of it.
  // --dump-restores: a restore of the dump pending at the next start.
  int64_t carrier = 0;
  std::string carrier_system;
  std::vector<int64_t> carrier_covered;
  bool dump_pending = false;
  int64_t dump_carrier = 0;
  std::string dump_system;
};

enum class EventKind : uint8_t {
  kBackendCheck,
  kBackendReserve,
  kBackendCas,
  kDurableDone,
  kBackendConfirm,
  kWorkerTick,
  kWorkerDeadline,
  kWorkerReply,
  kRegistryClaim,
  kRegistryPick,
  kWorkerPicked,
  kRegistryRelease,
  kReplay,
  kStart,
  kOperatorBound,
  kZombieDeath,
  kCheckDone,
  kRegistrySnapshot,
  kDropCreate,
  kEstablish,
  kFault,
};

struct Event {
  int64_t at_us;
  uint64_t sequence;  // ties break in the order of scheduling
  EventKind kind;
  int node;
  int backend;
  uint64_t incarnation;
  int64_t a;  // per kind: a bound, a request number, ...
  bool operator>(const Event& other) const {
    return at_us != other.at_us ? at_us > other.at_us : sequence > other.sequence;
  }
};

// A claim, pick or release on its way to the registry, and the registry's
// answer.
struct Message {
  int node;
  uint64_t incarnation;
  uint64_t request;
  int64_t sent_mono;
  int identity = -1;    // the row claimed or released
  bool picked = false;  // a claim of the identity a pick gave
  bool probe = false;   // the request asked for the probe (its answer carries it)
  bool is_pick = false;
  automatic::Pick pick;
  registry_row::ClaimRequest claim;
  bool is_release = false;
  int64_t renewed_at_us = 0;
  int64_t release_ms = 0;
  registry_row::ClaimAnswer answer;
  // The registry's identity and clock when it answered (the probe at
  // connection, and the table's OID the claim returns).
  registry_history::Identity registry;
  int64_t registry_now_us = 0;
};

}  // namespace snowflake::sim
