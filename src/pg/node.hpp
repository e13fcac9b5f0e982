// The node's generator in shared memory, its durable bound, and its counters.
#pragma once

#include <cstdint>

#include "../core/generator.hpp"

namespace snowflake::pg {

// A durable bound covers this far past the ID that needed it, and is raised
// again once IDs come within the margin of it.
inline constexpr int64_t kDurableIntervalMs = 1000;
inline constexpr int64_t kDurableMarginMs = kDurableIntervalMs / 2;

// What each backend counts; the node's figures are the sums (the largest step:
// the maximum) over live backends and those that have exited.
enum Counter : int {
  kIdsIssued,
  kSequenceWaits,       // calls that waited for the next millisecond
  kClockWaits,          // calls that waited for a clock behind the generator
  kClockErrors,         // calls that failed because the clock was too far behind
  kClockSteps,          // backward clock steps this backend saw
  kLargestClockStepMs,  // the largest of them
  kCounterCount
};

struct Counters {
  int64_t value[kCounterCount] = {};
};

// shmem_request_hook / shmem_startup_hook / _PG_init (preload only).
void request_node_memory();
void attach_node_memory();
void register_wal_resource_manager();

// The generator, or nullptr when the library was not preloaded.
Generator* node_generator();

// Makes a durable bound after `timestamp`'s millisecond (and a margin beyond),
// written to WAL and the state file before it is used. With
// `wait` false it gives up at once if another backend is already at it.
void make_durable(int64_t timestamp, bool wait);

// This backend's counters (also published to its shared-memory slot).
void count(Counter counter, int64_t amount = 1);
void count_largest(Counter counter, int64_t value);

// The node's totals; and each live backend's, one call of `visit` per backend.
Counters node_counters();
void visit_backends(void (*visit)(int pid, const Counters& counters, void* context), void* context);

}  // namespace snowflake::pg
