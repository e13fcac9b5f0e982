// The generator under random operations (see generator_run.hpp). What every
// outcome must keep, whatever the clock reads:
// - issued IDs are the layout's, of the node that asked, strictly above every
//   ID issued or floored before (the node's last_id), of a unit below the
//   durable bound and at or after the clock's, within max_lead of the clock;
// - a run holds 1..wanted IDs of one unit, sequence_step() apart;
// - a wait is for a time after the reading; an exhausted layout is past its
//   last issued unit; durable bounds grow and stay within the layout.
#include "generator_run.hpp"

#include <cstdint>

#include "fuzz_check.hpp"
#include "generator.hpp"

namespace {

using snowflake::Generator;
using snowflake::Layout;
using snowflake::Outcome;
using snowflake::Step;

int64_t reading_of(const Layout& layout, FuzzedDataProvider& in, int64_t previous) {
  // The clock as ms since the layout's epoch: any time ms since 1970 can hold.
  const int64_t highest = INT64_MAX - layout.epoch_ms();
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0:
      return in.ConsumeIntegralInRange<int64_t>(-1000, highest);
    case 1:
      return layout.start_ms(layout.max_issued_timestamp()) + in.ConsumeIntegralInRange<int>(-3, 3);
    case 2:
      return in.ConsumeIntegralInRange<int>(-2, 2);
    default: {
      const int64_t step = in.ConsumeIntegralInRange<int64_t>(-5000, 5000);
      if (step > 0 && previous > highest - step) return highest;
      return previous + step;
    }
  }
}

void check_issued(const Layout& layout, const Outcome& outcome, int64_t node, int64_t wanted,
                  int64_t last_before, int64_t durable_until, int64_t reading,
                  const snowflake::Policy& policy) {
  FUZZ_CHECK(outcome.count >= 1 && outcome.count <= wanted);
  FUZZ_CHECK(outcome.first_id > last_before);
  FUZZ_CHECK(outcome.timestamp < durable_until);
  FUZZ_CHECK(outcome.timestamp >= layout.timestamp_at(reading));
  FUZZ_CHECK(layout.start_ms(outcome.timestamp) - reading <= policy.max_lead_ms);
  const int64_t last_id =
      outcome.first_id + (outcome.count - 1) * layout.sequence_step();  // no overflow: below
  for (const int64_t id : {outcome.first_id, last_id}) {
    FUZZ_CHECK(id >= 0 && layout.holds(id));
    FUZZ_CHECK(layout.timestamp_of(id) == outcome.timestamp);
    FUZZ_CHECK(layout.timestamp_of(id) <= layout.max_issued_timestamp());
    FUZZ_CHECK(layout.node_of(id) == node);
  }
  FUZZ_CHECK(layout.sequence_of(last_id) - layout.sequence_of(outcome.first_id) ==
             outcome.count - 1);
}

}  // namespace

void run_generator(const Layout& layout, FuzzedDataProvider& in) {
  snowflake::GeneratorState state;
  Generator generator(state, layout);
  FUZZ_CHECK(generator.sequence_spread() >= 1 && generator.sequence_spread() <= 32);
  FUZZ_CHECK(generator.sequence_spread() <= layout.max_sequence() + 1);
  const int64_t end = layout.max_issued_timestamp() + 1;
  int64_t reading = in.ConsumeIntegralInRange<int64_t>(0, layout.start_ms(end - 1));
  int operations = in.ConsumeIntegralInRange<int>(1, 64);
  while (operations-- > 0 && in.remaining_bytes() > 0) {
    const int64_t durable_before = state.durable_until.load();
    switch (in.ConsumeIntegralInRange<int>(0, 9)) {
      case 0:
        generator.restore(in.ConsumeIntegralInRange<int64_t>(-2, end + 2));
        break;
      case 1: {
        const int64_t floor = in.ConsumeIntegralInRange<int64_t>(-2, end + 2);
        const int64_t last_before = state.last_id.load();
        generator.raise_floor(floor);
        const int64_t last = state.last_id.load();
        FUZZ_CHECK(last >= last_before);
        if (floor > 0) FUZZ_CHECK(layout.timestamp_of(last) + 1 >= (floor < end ? floor : end));
        break;
      }
      case 2: {
        const int64_t t = in.ConsumeIntegralInRange<int64_t>(0, end);
        const int64_t units = in.ConsumeIntegralInRange<int64_t>(1, INT64_MAX);
        const int64_t until = generator.durable_until_after(t, units);
        FUZZ_CHECK(until <= end && (t >= end || until > t));
        generator.publish_durable(until);
        break;
      }
      default: {
        reading = reading_of(layout, in, reading);
        const int64_t node = in.ConsumeIntegralInRange<int64_t>(0, layout.max_node());
        const int64_t wanted =
            in.ConsumeBool() ? 1 : in.ConsumeIntegralInRange<int64_t>(1, 1 << 20);
        snowflake::Policy policy;
        policy.max_lead_ms = in.ConsumeIntegralInRange<int64_t>(0, 10000);
        policy.clock_wait_budget_ms = in.ConsumeIntegralInRange<int64_t>(0, 10000);
        const int64_t last_before = state.last_id.load();
        const Outcome outcome = generator.reserve(reading, node, wanted, policy);
        switch (outcome.step) {
          case Step::kIssued:
            check_issued(layout, outcome, node, wanted, last_before, durable_before, reading,
                         policy);
            FUZZ_CHECK(state.last_id.load() ==
                       outcome.first_id + (outcome.count - 1) * layout.sequence_step());
            break;
          case Step::kNeedDurable: {
            FUZZ_CHECK(outcome.timestamp >= durable_before && outcome.timestamp < end);
            const int64_t until = generator.durable_until_after(outcome.timestamp);
            FUZZ_CHECK(until > outcome.timestamp && until <= end);
            generator.publish_durable(until);
            break;
          }
          case Step::kWaitForSequence:
          case Step::kWaitForClock:
          case Step::kClockBehind:
            FUZZ_CHECK(outcome.wait_until > reading);
            break;
          case Step::kClockBeforeEpoch:
            FUZZ_CHECK(reading < 0);
            break;
          case Step::kTimestampExhausted:
            FUZZ_CHECK(outcome.timestamp >= end);
            break;
        }
        if (outcome.step != Step::kIssued) FUZZ_CHECK(state.last_id.load() == last_before);
      }
    }
    FUZZ_CHECK(state.durable_until.load() >= durable_before);
    FUZZ_CHECK(state.durable_until.load() <= end);
  }
}
