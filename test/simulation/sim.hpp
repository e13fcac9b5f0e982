// The deterministic simulator of the registry protocol (doc/simulation.md):
// many nodes, each with the real generator (src/core/generator.hpp), the
// real lease decisions (src/core/lease.hpp), automatic leasing's real pick
// (src/core/pick.hpp), a registry that runs the real claim statement's
// pure version (src/core/registry_row.hpp) and the nodes' real defence
// against a registry that loses its history (src/core/registry_history.hpp),
// driven through
// simulated time with faults. One seed, one run: the same seed and flags
// replay it event for event.
#pragma once

#include <cstdint>
#include <string>

namespace snowflake::sim {

// Faults injected, by kind.
enum Fault : int {
  kCrash,        // the node's processes die: memory lost, the durable bound kept
  kRestart,      // clean shutdown (the release at shutdown) and start
  kStepForward,  // the wall clock jumps forward
  kStepBack,     // the wall clock jumps back
  kSlew,         // the wall clock runs fast or slow for a while
  kPartition,    // the node cannot reach the registry for a while
  kOutage,       // the registry answers no one for a while
  kLostReply,    // the registry applies a request, its reply is lost
  kLateMessage,  // a request or release reaches the registry late
  kStall,        // a backend pauses between its steps, up to leases
  kPromotion,    // the node's standby (its replayed bound) is promoted
  kRestore,      // a restore without pg_snowflake/, then the operator's bound
  kClone,        // a copy of the node started beside it: a clone (the same system,
                 // timeline, host and data directory) or a restored backup (a later
                 // timeline, elsewhere); another postmaster, so another token
  kUpgrade,      // pg_upgrade into a new data directory: with Debian's hook (the old
                 // bound given), without it, or into a cluster tried out first
  kStaleState,   // an older copy of pg_snowflake/state (a backup's) put back after a
                 // clean stop or a crash, the wall clock back at the time of the copy
  kDropCreate,   // DROP EXTENSION and CREATE EXTENSION before the bound is known
                 // (after half the restores and upgrades, not drawn on its own)
  kRecreate,     // the registry's table dropped and made again, empty: another OID
                 // (--registry-recreated: half the registry's outages)
  kFaultKinds
};
const char* fault_name(int fault);

// Safeguards a mutant removes (the simulator must then find a duplicate).
enum class Mutant {
  kNone,
  kNoFloor,       // a takeover does not raise the generator's floor
  kNoDurable,     // IDs of a new unit without a durable bound first
  kNoConfirm,     // the lease checked only before reserving, not after
  kNoFloorCheck,  // after reserving, the floor not checked (before issue 29)
  kNoCapReport,   // a renewal may report less than its cap (before issue 29)
  kStaleRelease,  // the release matches any row of the holder (before issue 29)
  kNoToken,       // the same holder without the token: the same system, timeline,
                  // host and data directory (before issue 37)
  // The durable bound's rules (src/core/bound.hpp), seen by the nodes without
  // the registry, which nothing else protects:
  kUpgradeWithoutMark,   // pg_upgrade's creation of the extension is an ordinary one
  kVouchOnCreate,        // a creation while the bound is unknown makes it known
  kNoDropMark,           // a drop while the bound is not known marks nothing
  kNoSyncWait,           // a bound used before the synchronous standby has it
  kForeignStateTrusted,  // a start trusts another system's state file (before issue 37)
  // The nodes' defence against a registry that loses its history
  // (src/core/registry_history.hpp), seen with --registry-recreated and
  // --registry-loses-commits:
  kNoHistoryDefence,  // no change of the registry's history is seen: no floor, no gap (1.6)
  kNoHistoryGap,      // a holder that sees a change goes on above its cap (1.7)
  // The dump's carrier of the bound (src/core/carrier.hpp; with --dump-restores):
  kNoDumpAdoption,      // a restored carrier is merged, never taken as the bound (before issue 44)
  kOriginNotConsulted,  // the replication origin of the bound is never read (before issue 44)
};
bool parse_mutant(const std::string& name, Mutant* mutant);
const char* mutant_name(Mutant mutant);

struct Config {
  uint64_t seed = 1;
  int nodes = 50;
  int backends = 2;              // per node
  int64_t duration_ms = 120000;  // simulated
  int64_t lease_ms = 3000;
  int64_t gap_ms = 20;  // a backend's mean pause between IDs
  double faults_per_node_minute = 3;
  // The share of nodes without a configured worker_id, which lease
  // automatically (pick); < 0: drawn per seed.
  double automatic = -1;
  // Nodes with a worker_id of their own and no registry (their bound alone
  // keeps their IDs unique), each with a synchronous standby; < 0: nodes / 10.
  int registryless = -1;
  // The registry is a primary with an asynchronous standby: an outage is a
  // failover to the standby, which lacks the latest commits (its rows revert
  // to a snapshot 0.1 s to a lease old). Known to yield duplicates: the
  // registry must be synchronous (doc/registry.md).
  bool registry_loses_commits = false;
  // Half the restores bring another node's pg_snowflake/ (its state file and
  // marks). The state file records the system identifier of its writer, so a
  // start takes another system's for no state file of its own: the bound
  // unknown until an operator gives it (the mutant foreign-state-trusted
  // trusts it, and issues the node's IDs again; doc/simulation.md).
  bool foreign_state_files = false;
  // Half the registry's outages drop its table and make it again, empty
  // (another OID): the leases in it are forgotten while their holders issue.
  bool registry_recreated = false;
  // A failover of the registry that loses commits keeps its timeline (a
  // snapshot started as it was): only the nodes that saw a row lost see it.
  bool registry_reverts_in_place = false;
  // Wall clocks stay in step with the registry's: within lease / 20 of it, no
  // clock steps or slews (the history floor's assumption).
  bool clocks_in_step = false;
  // No node reaches the registry for the first time after a change of its
  // history (the case the defence does not cover): every node remembers the
  // registry's first identity from its creation, and restores and upgrades
  // keep what it remembers (pg_snowflake/registry).
  bool nodes_knew_registry = false;
  // A tenth of the faults (drawn apart, after the others) move a node by
  // pg_dump: it stops, and its database is restored into a new cluster (a
  // new system identifier, an empty pg_snowflake/) with the same identity,
  // which the restore's trigger or the first ID gives the old node's bound
  // through snowflake_dump_bound (issue 44).
  bool dump_restores = false;
  Mutant mutant = Mutant::kNone;
  bool trace = false;  // print every fault
};

struct Figures {
  uint64_t events = 0;
  uint64_t ids = 0;
  uint64_t refused = 0;  // reservations the lease decisions did not let out
  double node_hours = 0;
  uint64_t faults[kFaultKinds] = {};
  uint64_t takeovers = 0;
  uint64_t automatic_nodes = 0;      // nodes (standbys included) without a worker_id
  uint64_t picks = 0;                // picks answered by the registry
  uint64_t own_picks = 0;            // ... that gave the node its own row back
  uint64_t none_free = 0;            // ... that found every identity leased
  uint64_t lost_races = 0;           // claims after a pick that another node won
  uint64_t automatic_takeovers = 0;  // claims after a pick that took a row over
  uint64_t lost_identities = 0;      // picks that passed over the node's own live row
  uint64_t clones = 0;               // clones and restored copies started beside their original
  uint64_t clone_takeovers = 0;      // ... that took a row over
  uint64_t registryless_nodes = 0;   // nodes (standbys included) without the registry
  uint64_t operator_bounds = 0;      // bounds an operator gave to a node that refused IDs
  uint64_t registry_reverts = 0;     // failovers of the registry that lost commits
  uint64_t foreign_states = 0;       // restores with another node's pg_snowflake/
  uint64_t history_changes = 0;      // changes of the registry's history nodes saw
  uint64_t history_floors = 0;       // claims raised to a history floor
  uint64_t history_gaps = 0;         // gaps a holder crossed after a change
  uint64_t dump_restores = 0;        // nodes moved by pg_dump and a restore (--dump-restores)
  uint64_t dump_adoptions = 0;       // ... whose carrier the first ID took, not the trigger
  uint64_t origin_answers = 0;       // starts without a state file the origin gave the bound
  uint64_t older_files_found = 0;    // starts whose state file the origin showed older
  uint64_t duplicates = 0;
  uint64_t order_violations = 0;
  std::string first_violation;
};

// One run: the figures, with every issued ID checked against every other and
// each node's IDs against their order.
Figures run(const Config& config);

}  // namespace snowflake::sim
