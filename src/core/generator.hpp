// The ID generator: one node's state machine, shared by all its processes.
//
// Concurrency protocol. Everything a node's processes share is one
// GeneratorState, made only of lock-free atomics (in PostgreSQL it lives in
// shared memory). `last_id` is the last ID the node issued; a caller computes
// the successor of the value it read and installs it with one compare-and-swap.
// A failed CAS means another caller issued first: recompute from the value the
// CAS returned. Every ID is therefore issued exactly once and IDs are strictly
// increasing in the order their CAS succeeded.
//
// `durable_until` is the promise kept across crashes: every ID ever issued
// has a timestamp below it, and no ID of a later unit of time is issued until
// the caller has made a later bound durable (kNeedDurable). It only grows.
// After a restart, or on a standby replaying the primary's bound, restore()
// raises `last_id` to the last ID before the bound, so the next ID is greater
// than any issued before.
//
// Time. Timestamps (of IDs, the durable bound, the floor) are in the layout's
// unit since its epoch (layout.hpp); clock readings, waits and the policy are
// in milliseconds since the epoch, whatever the unit, so max_lead and the wait
// budget mean the same in every layout. With a 1 ms unit the two coincide.
//
// The clock is a parameter (a Clock), so tests can drive the generator
// through any sequence of readings, backwards included. The generator reads it
// after reading the shared state, and again after a failed compare-and-swap:
// a reading older than the last ID another process issued would look like the
// clock going backwards. A coarse reading decides when even its latest time
// is within the last ID's unit and its earliest keeps the lead within max_lead
// (the generator is ahead of the clock: its own timestamp decides); otherwise
// a precise reading decides. It never waits itself: it says what to wait for
// and the caller waits.
#pragma once

#include <atomic>
#include <cstdint>

#include "clock.hpp"
#include "layout.hpp"

namespace snowflake {

static_assert(std::atomic<int64_t>::is_always_lock_free,
              "the generator state must be usable from several processes");

// A durable bound covers this far past the ID that needed it (at least four
// units of the layout's time), and is raised early, when the lock is free,
// once IDs come within half of that.
inline constexpr int64_t kDurableIntervalMs = 1000;

struct alignas(64) GeneratorState {
  std::atomic<int64_t> last_id{0};
  std::atomic<int64_t> durable_until{0};  // a timestamp of the layout
  // The latest clock reading any caller brought (ms since the epoch).
  std::atomic<int64_t> clock_high_water{0};
  // The high-water mark at which the last backward clock step was counted, so
  // that a step is counted once however many callers see it.
  std::atomic<int64_t> step_counted_at{0};
  std::atomic<int64_t> clock_steps{0};
  std::atomic<int64_t> largest_clock_step_ms{0};
};

struct Policy {
  // snowflake.max_lead: how far the generator's timestamp may run ahead of the
  // clock without waiting.
  int64_t max_lead_ms = 0;
  // What is left of snowflake.max_clock_backward_wait for this call.
  int64_t clock_wait_budget_ms = 0;
};

enum class Step : uint8_t {
  kIssued,              // [first_id, first_id + count) belong to the caller
  kWaitForSequence,     // the unit's sequence is used up: wait for wait_until
  kWaitForClock,        // the clock is behind the generator: wait for wait_until
  kClockBehind,         // the clock is further behind than the wait budget allows
  kNeedDurable,         // the next ID's unit is not durable yet: raise it, retry
  kClockBeforeEpoch,    // the clock reads earlier than the layout's epoch
  kTimestampExhausted,  // the layout's last unit has passed
};

// Timestamps in the layout's unit, clock readings in ms (both since the epoch).
struct Outcome {
  Step step = Step::kIssued;
  int64_t first_id = 0;  // kIssued
  // kIssued: the node's consecutive IDs, all in one unit, sequence_step() apart.
  int64_t count = 0;
  int64_t timestamp = 0;         // timestamp of the (candidate) ID
  int64_t wait_until = 0;        // kWaitFor*: the clock reading (ms) to wait for
  int64_t last_timestamp = 0;    // the generator's timestamp before this call
  int64_t clock = 0;             // the clock reading (ms) this call used
  bool refresh_durable = false;  // kIssued near durable_until: raise it when convenient
  // Set when the clock read earlier than the node's high-water mark.
  int64_t clock_step_ms = 0;
  int64_t clock_high_water = 0;    // identifies the step, for per-caller counting
  bool first_to_see_step = false;  // this call counted the step for the node
};

class Generator {
 public:
  Generator(GeneratorState& state, const Layout& layout) noexcept;

  // Reserves up to `wanted` (>= 1) consecutive IDs for `node` at the time
  // `clock` reads. The run never crosses a unit of time, so a caller wanting
  // more calls again.
  Outcome reserve(const Clock& clock, int64_t node, int64_t wanted, const Policy& policy) noexcept;
  Outcome next(const Clock& clock, int64_t node, const Policy& policy) noexcept {
    return reserve(clock, node, 1, policy);
  }
  // The same with a clock that reads `reading`.
  Outcome reserve(int64_t reading, int64_t node, int64_t wanted, const Policy& policy) noexcept {
    return reserve(FixedClock(reading), node, wanted, policy);
  }
  Outcome next(int64_t reading, int64_t node, const Policy& policy) noexcept {
    return reserve(FixedClock(reading), node, 1, policy);
  }

  // The durable bound kDurableIntervalMs after `timestamp` (in units:
  // durable_interval()), or `units` (>= 1) after it: it covers the IDs of
  // `timestamp` and the units up to the bound, never past the last unit the
  // generator issues.
  int64_t durable_until_after(int64_t timestamp) const noexcept {
    return durable_until_after(timestamp, durable_interval_);
  }
  int64_t durable_until_after(int64_t timestamp, int64_t units) const noexcept;
  // Whether the durable bound `until` is near enough to IDs of `timestamp`
  // to be raised: closer than half the interval.
  bool durable_bound_near(int64_t until, int64_t timestamp) const noexcept {
    return until < durable_until_after(timestamp, durable_interval_ / 2);
  }
  int64_t durable_interval() const noexcept { return durable_interval_; }
  // Records that `until` is durable (the bound only grows).
  void publish_durable(int64_t until) noexcept;
  // After a restart or a replayed bound: IDs of units before `until`
  // may have been issued, so the next one must be of `until` or later, and
  // `until` is durable.
  void restore(int64_t until) noexcept;
  // Another node may have issued IDs of units before `timestamp` with
  // this node's identity: the next ID must be of `timestamp` or later. Nothing
  // is made durable: issuing there still needs a durable bound (kNeedDurable).
  void raise_floor(int64_t timestamp) noexcept;

  // Where the sequence starts in a fresh unit of time (see generator.cpp).
  int64_t sequence_start(int64_t timestamp) const noexcept;
  int64_t sequence_spread() const noexcept { return spread_; }

  const Layout& layout() const noexcept { return layout_; }
  GeneratorState& state() noexcept { return state_; }

 private:
  struct Candidate {
    int64_t timestamp;
    int64_t sequence;
  };
  Candidate successor(int64_t last, int64_t clock, int64_t node) const noexcept;
  void observe_clock(const Reading& reading, int64_t high_water, Outcome& outcome) noexcept;

  GeneratorState& state_;
  Layout layout_;
  int64_t spread_;
  int64_t durable_interval_;
};

}  // namespace snowflake
