// The generator's state machine; the protocol is described in generator.hpp.
#include "generator.hpp"

#include <algorithm>

namespace snowflake {

namespace {

// At most this many sequence values are skipped at the start of a unit of
// time, and never more than 1/kSpreadShare of the sequence space.
constexpr int64_t kMaxSpread = 32;
constexpr int64_t kSpreadShare = 128;

int64_t spread_for(const Layout& layout) {
  const int64_t capacity = layout.max_sequence() + 1;
  int64_t spread = 1;
  while (spread * 2 <= kMaxSpread && spread * 2 * kSpreadShare <= capacity) spread *= 2;
  return spread;
}

// splitmix64's finalizer: a cheap, well-mixed hash of the timestamp.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void raise_to(std::atomic<int64_t>& target, int64_t value) {
  int64_t seen = target.load(std::memory_order_relaxed);
  while (seen < value && !target.compare_exchange_weak(seen, value, std::memory_order_acq_rel,
                                                       std::memory_order_relaxed)) {
  }
}

// kDurableIntervalMs in units, and at least four, so that half of it (the
// margin at which the bound is raised early) is at least two units.
int64_t durable_interval_for(const Layout& layout) {
  return std::max<int64_t>(4, layout.timestamp_from(kDurableIntervalMs));
}

}  // namespace

Generator::Generator(GeneratorState& state, const Layout& layout) noexcept
    : state_(state),
      layout_(layout),
      spread_(spread_for(layout)),
      durable_interval_(durable_interval_for(layout)) {}

// At low rates every unit of time starts a new sequence. Starting each at 0
// would make nearly every ID even and `id % n` sharding skewed (where the
// sequence is the lowest field), so the start is a hash of the timestamp in
// [0, spread): uniform residues at low rates, at most 32 of 4,096 values lost
// when a unit is used up.
int64_t Generator::sequence_start(int64_t timestamp) const noexcept {
  return static_cast<int64_t>(mix(static_cast<uint64_t>(timestamp)) >> 32) & (spread_ - 1);
}

// The first place after `last` where `node` may issue when the clock is in
// the unit `clock`.
Generator::Candidate Generator::successor(int64_t last, int64_t clock,
                                          int64_t node) const noexcept {
  const int64_t last_timestamp = layout_.timestamp_of(last);
  if (clock > last_timestamp) return {clock, sequence_start(clock)};
  // The clock has not moved past the last ID: stay in its unit with the
  // smallest sequence whose ID is greater, else take the next unit.
  const int64_t last_sequence = layout_.sequence_of(last);
  const int64_t next_unit = last_timestamp + 1;
  if (layout_.node_of(last) == node) {
    if (last_sequence < layout_.max_sequence()) return {last_timestamp, last_sequence + 1};
    return {next_unit, sequence_start(next_unit)};
  }
  // Another node number (the identity changed): the node's bits above the
  // sequence decide first, then the sequence, then its bits below.
  const uint64_t mine = layout_.node_bits_in_id(node);
  const uint64_t theirs = static_cast<uint64_t>(last);
  const uint64_t above = layout_.bits_above_sequence();
  const uint64_t below = layout_.bits_below_sequence();
  if ((mine & above) > (theirs & above)) return {last_timestamp, sequence_start(last_timestamp)};
  if ((mine & above) < (theirs & above)) return {next_unit, sequence_start(next_unit)};
  if ((mine & below) > (theirs & below)) return {last_timestamp, last_sequence};
  if (last_sequence < layout_.max_sequence()) return {last_timestamp, last_sequence + 1};
  return {next_unit, sequence_start(next_unit)};
}

// `high_water` was read before the clock, so a reading below it is a real
// step back, not a reading that another process overtook. A coarse reading
// raises the mark by its earliest time and shows a step by its latest, so
// neither can be taken for a step that did not happen.
void Generator::observe_clock(const Reading& reading, int64_t high_water,
                              Outcome& outcome) noexcept {
  if (reading.earliest > high_water) {
    // Losing this race only means another caller brought a later reading.
    state_.clock_high_water.compare_exchange_strong(high_water, reading.earliest,
                                                    std::memory_order_relaxed);
    outcome.clock_high_water = reading.earliest;
    return;
  }
  outcome.clock_high_water = high_water;
  if (reading.latest >= high_water) return;
  outcome.clock_step_ms = high_water - reading.latest;
  int64_t counted_at = state_.step_counted_at.load(std::memory_order_relaxed);
  if (counted_at != high_water && state_.step_counted_at.compare_exchange_strong(
                                      counted_at, high_water, std::memory_order_relaxed)) {
    outcome.first_to_see_step = true;
    state_.clock_steps.fetch_add(1, std::memory_order_relaxed);
  }
  raise_to(state_.largest_clock_step_ms, outcome.clock_step_ms);
}

Outcome Generator::reserve(const Clock& clock, int64_t node, int64_t wanted,
                           const Policy& policy) noexcept {
  Outcome outcome;
  // The shared state first, then the clock (see generator.hpp).
  const int64_t high_water = state_.clock_high_water.load(std::memory_order_acquire);
  int64_t last = state_.last_id.load(std::memory_order_acquire);
  bool observed = false;
  for (;;) {
    outcome.last_timestamp = layout_.timestamp_of(last);
    // An exact reading is precise already. An uncertain one decides only when
    // the generator is ahead of its latest time (so the last ID's unit
    // decides the candidate: that one or the next) and its earliest time keeps
    // that lead within max_lead.
    const int64_t next_unit_ms = layout_.start_ms(outcome.last_timestamp + 1);
    Reading reading = clock.coarse();
    if (reading.latest != reading.earliest &&
        (reading.earliest < 0 || reading.latest >= next_unit_ms ||
         next_unit_ms - reading.earliest > policy.max_lead_ms)) {
      const int64_t precise = clock.now();
      reading = {precise, precise};
    }
    const int64_t now = reading.earliest;
    outcome.clock = now;
    if (now < 0) {
      outcome.step = Step::kClockBeforeEpoch;
      return outcome;
    }
    if (!observed) observe_clock(reading, high_water, outcome);
    observed = true;
    const Candidate candidate = successor(last, layout_.timestamp_at(now), node);
    outcome.timestamp = candidate.timestamp;
    if (candidate.timestamp > layout_.max_issued_timestamp()) {
      outcome.step = Step::kTimestampExhausted;
      return outcome;
    }

    const int64_t candidate_ms = layout_.start_ms(candidate.timestamp);
    if (candidate_ms - now > policy.max_lead_ms) {
      outcome.wait_until = candidate_ms - policy.max_lead_ms;
      const int64_t behind = layout_.start_ms(outcome.last_timestamp) - now;
      if (behind <= policy.max_lead_ms) {
        // Only the used-up unit is ahead of the lead: at most one unit.
        outcome.step = Step::kWaitForSequence;
      } else if (behind - policy.max_lead_ms > policy.clock_wait_budget_ms) {
        outcome.step = Step::kClockBehind;
      } else {
        outcome.step = Step::kWaitForClock;
      }
      return outcome;
    }

    const int64_t durable_until = state_.durable_until.load(std::memory_order_acquire);
    if (candidate.timestamp >= durable_until) {
      outcome.step = Step::kNeedDurable;
      return outcome;
    }
    const int64_t first = layout_.compose(candidate.timestamp, node, candidate.sequence);
    const int64_t count = std::min(wanted, layout_.max_sequence() - candidate.sequence + 1);
    const int64_t last_of_run = first + (count - 1) * layout_.sequence_step();
    if (state_.last_id.compare_exchange_weak(last, last_of_run, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
      outcome.step = Step::kIssued;
      outcome.first_id = first;
      outcome.count = count;
      outcome.refresh_durable = durable_bound_near(durable_until, candidate.timestamp);
      return outcome;
    }
    // Another caller issued first, and time has passed: read the clock again.
  }
}

int64_t Generator::durable_until_after(int64_t timestamp, int64_t units) const noexcept {
  const int64_t end = layout_.max_issued_timestamp() + 1;
  return timestamp >= end - units ? end : timestamp + units;
}

void Generator::publish_durable(int64_t until) noexcept {
  raise_to(state_.durable_until, until);
}

// The floor goes up before the bound: a caller that read `last_id` before the
// floor rose and `durable_until` after the bound rose fails its CAS, where the
// other order would let it issue below the floor.
void Generator::restore(int64_t until) noexcept {
  if (until <= 0) return;
  until = std::min(until, layout_.max_issued_timestamp() + 1);
  raise_floor(until);
  raise_to(state_.durable_until, until);
}

void Generator::raise_floor(int64_t timestamp) noexcept {
  if (timestamp <= 0) return;
  timestamp = std::min(timestamp, layout_.max_issued_timestamp() + 1);
  raise_to(state_.last_id, layout_.max_id(timestamp - 1));
}

}  // namespace snowflake
