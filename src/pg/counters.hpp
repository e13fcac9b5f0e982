// What each backend counts as it issues IDs, and the node's sums
// (counters.cpp).
#pragma once

#include <cstdint>

namespace snowflake::pg {

// What each backend counts; the node's figures are the sums (the largest step:
// the maximum) over live backends and those that have exited.
enum Counter : int {
  kIdsIssued,
  kSequenceWaits,       // calls that waited for the next millisecond
  kClockWaits,          // calls that waited for a clock behind the generator
  kClockErrors,         // calls that failed because the clock was too far behind
  kClockSteps,          // backward clock steps this backend saw
  kLargestClockStepMs,  // the largest of them
  kDurableWaits,        // waits for a new durable bound (make_durable's, durable.cpp)
  kDurableWaitUs,       // the time they took, in microseconds (shown in ms)
  kCounterCount
};

struct Counters {
  int64_t value[kCounterCount] = {};
};

// A counter as its status column shows it: kDurableWaitUs in whole ms of the
// total (so that short waits add up), every other one as it is.
inline int64_t counter_column(int counter, int64_t value) {
  return counter == kDurableWaitUs ? value / 1000 : value;
}

// This backend's counters (also published to its shared-memory slot).
void count(Counter counter, int64_t amount = 1);
void count_largest(Counter counter, int64_t value);

// The node's totals; and each live backend's, one call of `visit` per backend.
Counters node_counters();
void visit_backends(void (*visit)(int pid, const Counters& counters, void* context), void* context);

}  // namespace snowflake::pg
