// snowflake_sim: runs seeds of the simulation (doc/simulation.md) and prints
// what they explored. Exit status 0 when no seed found a duplicate, an ID out
// of order or a pick that passed over the node's own live row (with
// --expect-duplicate: when some seed found a duplicate, as a mutant must); 1
// otherwise; 2 on bad arguments.
//
//   snowflake_sim --seed 1 --seeds 20 --nodes 50 --duration-s 120
//   snowflake_sim --seed 7 --nodes 1000 --trace          replays one seed
//   snowflake_sim --mutant no-floor --seeds 50 --expect-duplicate
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sim.hpp"

using namespace snowflake::sim;

namespace {

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "snowflake_sim: %s\n"
               "usage: snowflake_sim [--seed N] [--seeds K] [--nodes N] [--backends N]\n"
               "  [--duration-s S] [--lease-ms MS] [--gap-ms MS] [--faults PER_NODE_MINUTE]\n"
               "  [--automatic SHARE] [--registryless N] [--registry-loses-commits]\n"
               "  [--foreign-state-files] [--registry-recreated] [--registry-reverts-in-place]\n"
               "  [--clocks-in-step] [--nodes-knew-registry] [--dump-restores]\n"
               "  [--mutant none|no-floor|no-durable|no-confirm|no-floor-check|no-cap-report|\n"
               "   stale-release|no-token|upgrade-without-mark|vouch-on-create|no-drop-mark|\n"
               "   no-sync-wait|foreign-state-trusted|no-history-defence|no-history-gap|\n"
               "   no-dump-adoption|origin-not-consulted]\n"
               "  [--expect-duplicate] [--budget-s S] [--trace]\n",
               why);
  std::exit(2);
}

std::string replay_command(const Config& config) {
  char text[512];
  std::snprintf(text, sizeof(text),
                "build/simulation/snowflake_sim --seed %llu --nodes %d --backends %d "
                "--duration-s %lld --lease-ms %lld --gap-ms %lld --faults %g --mutant %s",
                static_cast<unsigned long long>(config.seed), config.nodes, config.backends,
                static_cast<long long>(config.duration_ms / 1000),
                static_cast<long long>(config.lease_ms), static_cast<long long>(config.gap_ms),
                config.faults_per_node_minute, mutant_name(config.mutant));
  std::string command = text;
  if (config.automatic >= 0) {
    std::snprintf(text, sizeof(text), " --automatic %g", config.automatic);
    command += text;
  }
  if (config.registry_loses_commits) command += " --registry-loses-commits";
  if (config.foreign_state_files) command += " --foreign-state-files";
  if (config.registry_recreated) command += " --registry-recreated";
  if (config.registry_reverts_in_place) command += " --registry-reverts-in-place";
  if (config.clocks_in_step) command += " --clocks-in-step";
  if (config.nodes_knew_registry) command += " --nodes-knew-registry";
  if (config.dump_restores) command += " --dump-restores";
  if (config.registryless >= 0) {
    std::snprintf(text, sizeof(text), " --registryless %d", config.registryless);
    command += text;
  }
  return command;
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  uint64_t seeds = 1;
  bool expect_duplicate = false;
  double budget_s = 0;
  for (int i = 1; i < argc; i++) {
    const std::string flag = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(("missing value after " + flag).c_str());
      return argv[++i];
    };
    if (flag == "--seed")
      config.seed = std::strtoull(value(), nullptr, 10);
    else if (flag == "--seeds")
      seeds = std::strtoull(value(), nullptr, 10);
    else if (flag == "--nodes")
      config.nodes = std::atoi(value());
    else if (flag == "--backends")
      config.backends = std::atoi(value());
    else if (flag == "--duration-s")
      config.duration_ms = std::atoll(value()) * 1000;
    else if (flag == "--lease-ms")
      config.lease_ms = std::atoll(value());
    else if (flag == "--gap-ms")
      config.gap_ms = std::atoll(value());
    else if (flag == "--faults")
      config.faults_per_node_minute = std::atof(value());
    else if (flag == "--automatic")
      config.automatic = std::atof(value());
    else if (flag == "--foreign-state-files")
      config.foreign_state_files = true;
    else if (flag == "--dump-restores")
      config.dump_restores = true;
    else if (flag == "--registry-loses-commits")
      config.registry_loses_commits = true;
    else if (flag == "--registry-recreated")
      config.registry_recreated = true;
    else if (flag == "--registry-reverts-in-place")
      config.registry_reverts_in_place = true;
    else if (flag == "--clocks-in-step")
      config.clocks_in_step = true;
    else if (flag == "--nodes-knew-registry")
      config.nodes_knew_registry = true;
    else if (flag == "--registryless")
      config.registryless = std::atoi(value());
    else if (flag == "--budget-s")
      budget_s = std::atof(value());
    else if (flag == "--expect-duplicate")
      expect_duplicate = true;
    else if (flag == "--trace")
      config.trace = true;
    else if (flag == "--mutant") {
      if (!parse_mutant(value(), &config.mutant)) usage("unknown mutant");
    } else {
      usage(("unknown argument " + flag).c_str());
    }
  }
  if (config.nodes < 1 || config.nodes > 1000) usage("--nodes must be 1 to 1000");
  if (config.backends < 1 || config.lease_ms < 100 || config.gap_ms < 1 || seeds < 1)
    usage("bad value");
  if (config.automatic > 1) usage("--automatic is a share of the nodes, 0 to 1");

  const auto started = std::chrono::steady_clock::now();
  Figures total;
  uint64_t ran = 0, failing = 0;
  const uint64_t first = config.seed;
  for (uint64_t seed = first; seed < first + seeds; seed++) {
    if (budget_s > 0 && ran > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() >
            budget_s)
      break;
    config.seed = seed;
    const Figures figures = run(config);
    ran++;
    total.events += figures.events;
    total.ids += figures.ids;
    total.refused += figures.refused;
    total.node_hours += figures.node_hours;
    total.takeovers += figures.takeovers;
    total.automatic_nodes += figures.automatic_nodes;
    total.picks += figures.picks;
    total.own_picks += figures.own_picks;
    total.none_free += figures.none_free;
    total.lost_races += figures.lost_races;
    total.automatic_takeovers += figures.automatic_takeovers;
    total.lost_identities += figures.lost_identities;
    total.clones += figures.clones;
    total.clone_takeovers += figures.clone_takeovers;
    total.registryless_nodes += figures.registryless_nodes;
    total.operator_bounds += figures.operator_bounds;
    total.registry_reverts += figures.registry_reverts;
    total.foreign_states += figures.foreign_states;
    total.history_changes += figures.history_changes;
    total.history_floors += figures.history_floors;
    total.history_gaps += figures.history_gaps;
    total.dump_restores += figures.dump_restores;
    total.dump_adoptions += figures.dump_adoptions;
    total.origin_answers += figures.origin_answers;
    total.older_files_found += figures.older_files_found;
    total.duplicates += figures.duplicates;
    total.order_violations += figures.order_violations;
    for (int k = 0; k < kFaultKinds; k++) total.faults[k] += figures.faults[k];
    if (figures.duplicates > 0 || figures.order_violations > 0 || figures.lost_identities > 0) {
      failing++;
      std::printf(
          "seed %llu: %llu duplicate(s), %llu ID(s) out of order, %llu own row(s) passed over; "
          "first: %s\n"
          "  replay: %s --trace\n",
          static_cast<unsigned long long>(seed),
          static_cast<unsigned long long>(figures.duplicates),
          static_cast<unsigned long long>(figures.order_violations),
          static_cast<unsigned long long>(figures.lost_identities), figures.first_violation.c_str(),
          replay_command(config).c_str());
      if (expect_duplicate && figures.duplicates > 0) break;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf(
      "simulation (mutant %s): seeds %llu (from %llu), %d nodes, simulated %.1f "
      "node-hours (%.4f node-years), %llu IDs, %llu refused after reserving, %llu "
      "takeovers (%llu by automatic picks), %llu events, %.1f s\n",
      mutant_name(config.mutant), static_cast<unsigned long long>(ran),
      static_cast<unsigned long long>(first), config.nodes, total.node_hours,
      total.node_hours / 8766, static_cast<unsigned long long>(total.ids),
      static_cast<unsigned long long>(total.refused),
      static_cast<unsigned long long>(total.takeovers),
      static_cast<unsigned long long>(total.automatic_takeovers),
      static_cast<unsigned long long>(total.events), seconds);
  std::printf(
      "  automatic: %llu nodes without a worker_id (%s), %llu picks (%llu their own row back, "
      "%llu none free), %llu claims lost to another node\n",
      static_cast<unsigned long long>(total.automatic_nodes),
      config.automatic >= 0 ? "--automatic" : "a share drawn per seed",
      static_cast<unsigned long long>(total.picks),
      static_cast<unsigned long long>(total.own_picks),
      static_cast<unsigned long long>(total.none_free),
      static_cast<unsigned long long>(total.lost_races));
  std::printf(
      "  clones and restored copies beside a running original: %llu (%llu took a row over)\n",
      static_cast<unsigned long long>(total.clones),
      static_cast<unsigned long long>(total.clone_takeovers));
  std::printf(
      "  without the registry: %llu nodes (a worker_id of their own, a synchronous standby); "
      "bounds an operator gave: %llu\n",
      static_cast<unsigned long long>(total.registryless_nodes),
      static_cast<unsigned long long>(total.operator_bounds));
  if (config.registry_loses_commits)
    std::printf("  failovers of the registry that lost commits: %llu\n",
                static_cast<unsigned long long>(total.registry_reverts));
  if (config.registry_loses_commits || config.registry_recreated)
    std::printf(
        "  the registry's history: %llu changes seen by nodes, %llu claims raised to the floor "
        "after one, %llu gaps crossed by holders\n",
        static_cast<unsigned long long>(total.history_changes),
        static_cast<unsigned long long>(total.history_floors),
        static_cast<unsigned long long>(total.history_gaps));
  if (config.foreign_state_files)
    std::printf("  restores with another node's pg_snowflake/: %llu\n",
                static_cast<unsigned long long>(total.foreign_states));
  if (config.dump_restores)
    std::printf(
        "  nodes moved by pg_dump and a restore: %llu (%llu carriers taken by a first ID)\n",
        static_cast<unsigned long long>(total.dump_restores),
        static_cast<unsigned long long>(total.dump_adoptions));
  std::printf(
      "  the replication origin of the bound: %llu older state files put back, %llu found older; "
      "%llu starts without a state file it gave the bound\n",
      static_cast<unsigned long long>(total.faults[kStaleState]),
      static_cast<unsigned long long>(total.older_files_found),
      static_cast<unsigned long long>(total.origin_answers));
  std::printf("  faults:");
  for (int k = 0; k < kFaultKinds; k++)
    std::printf(" %s=%llu", fault_name(k), static_cast<unsigned long long>(total.faults[k]));
  std::printf("\n  duplicates=%llu out-of-order=%llu own-row-passed-over=%llu\n",
              static_cast<unsigned long long>(total.duplicates),
              static_cast<unsigned long long>(total.order_violations),
              static_cast<unsigned long long>(total.lost_identities));
  if (expect_duplicate) {
    if (total.duplicates > 0) return 0;
    std::printf("  FAILED: the mutant %s yielded no duplicate\n", mutant_name(config.mutant));
    return 1;
  }
  return failing == 0 ? 0 : 1;
}
