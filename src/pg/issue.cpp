// Drives the generator (src/core/generator.hpp) from a backend: gives it the
// wall clock, waits as the clock policy says, raises the durable bound when
// the generator asks (durable.cpp) and the database's dump carrier before
// returning IDs past it (carrier.cpp), counts, and turns every refusal into
// an error.
//
// Waits. An exhausted unit of time is waited out by spinning when the wait is
// short (at most ~2 ms: sleeping would lose most of the next millisecond's
// capacity), on the process latch when it is longer (layouts that count 10 ms
// or seconds). A clock behind the generator is waited out on the latch in
// steps of at most kClockPollMs, so statement_timeout and pg_cancel_backend()
// end it at once, and the budget (snowflake.max_clock_backward_wait) is
// measured on the monotonic clock, which stepping the wall clock does not
// move. Waits and the policy are in milliseconds whatever the layout's unit.
#include "issue.hpp"

#include <algorithm>

#include "../core/clock.hpp"
#include "counters.hpp"
#include "bound/carrier.hpp"
#include "bound/durable.hpp"
#include "node.hpp"
#include "postgres.hpp"
#include "registry/registry.hpp"
#include "settings.hpp"
#include "time.hpp"

extern "C" {
#include "storage/s_lock.h"
}

namespace snowflake::pg {

namespace {

constexpr int64_t kClockPollMs = 100;
// A sequence wait longer than this means the clock moved meanwhile: look again.
constexpr int64_t kSequenceSpinLimitUs = 2000;
// A sequence wait longer than this sleeps instead of spinning.
constexpr int64_t kSequenceSpinMaxMs = 2;

// The clock high-water mark of the last backward step this backend counted.
int64_t step_counted_at = -1;

// A clock reading (ms since the layout's epoch) and a timestamp of the layout
// (units since it) as text.
const char* clock_text(int64_t clock) {
  return timestamp_text(timestamptz_from_unix_ms(clock + settings.layout.epoch_ms()));
}
const char* time_text(int64_t timestamp) {
  return timestamp_text(timestamptz_from_unix_ms(settings.layout.unix_ms(timestamp)));
}

Generator* require_generator() {
  Generator* generator = node_generator();
  if (unlikely(generator == nullptr)) {
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("snowflake must be loaded via shared_preload_libraries"),
             errdetail("The node's ID generator lives in shared memory, which is set up only "
                       "when the server starts with the library preloaded."),
             errhint("Add snowflake to shared_preload_libraries in postgresql.conf "
                     "(shared_preload_libraries = 'snowflake') and restart the server.")));
  }
  if (unlikely(RecoveryInProgress())) {
    ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
                    errmsg("cannot issue snowflake IDs during recovery"),
                    errdetail("A standby has its primary's snowflake.datacenter_id and "
                              "snowflake.worker_id, so IDs issued here could collide with the "
                              "primary's."),
                    errhint("Issue IDs on the primary, or promote this standby first.")));
  }
  return generator;
}

}  // namespace

void require_issuing_server() {
  (void)require_generator();
}

namespace {

void note_clock_step(const Outcome& outcome) {
  if (outcome.first_to_see_step) {
    ereport(LOG, (errmsg("snowflake: system clock stepped back by %lld ms",
                         static_cast<long long>(outcome.clock_step_ms)),
                  errdetail("The clock read %s after reading %s.", clock_text(outcome.clock),
                            clock_text(outcome.clock_high_water))));
  }
  if (outcome.clock_high_water != step_counted_at) {
    step_counted_at = outcome.clock_high_water;
    count(kClockSteps);
  }
  count_largest(kLargestClockStepMs, outcome.clock_step_ms);
}

void spin_until(const Clock& clock, int64_t until) {
  const int64_t give_up_us = monotonic_us() + kSequenceSpinLimitUs;
  while (clock.now() < until && monotonic_us() < give_up_us) {
    CHECK_FOR_INTERRUPTS();
    SPIN_DELAY();
  }
}

void sleep_until(int64_t until, int64_t clock) {
  const long timeout_ms = static_cast<long>(std::clamp<int64_t>(until - clock, 1, kClockPollMs));
  (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, timeout_ms,
                  PG_WAIT_EXTENSION);
  ResetLatch(MyLatch);
  CHECK_FOR_INTERRUPTS();
}

void report(const Outcome& outcome) {
  switch (outcome.step) {
    case Step::kClockBehind:
      if (settings.registry_configured) explain_clock_behind(outcome.last_timestamp, outcome.clock);
      count(kClockErrors);
      ereport(ERROR,
              (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
               errmsg("system clock moved backwards by %lld ms",
                      static_cast<long long>(settings.layout.start_ms(outcome.last_timestamp) -
                                             outcome.clock)),
               errdetail("The last ID was issued at %s; the clock now reads %s. "
                         "snowflake.max_lead is %d ms and snowflake.max_clock_backward_wait is "
                         "%d ms.",
                         time_text(outcome.last_timestamp), clock_text(outcome.clock),
                         settings.max_lead_ms, settings.max_clock_backward_wait_ms),
               errhint("Fix the clock (NTP), or raise snowflake.max_clock_backward_wait or "
                       "snowflake.max_lead.")));
      break;
    case Step::kClockBeforeEpoch:
      ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                      errmsg("system clock reads a time before snowflake.epoch"),
                      errdetail("The clock reads %s; snowflake.epoch is %s.",
                                clock_text(outcome.clock), clock_text(0)),
                      errhint("Fix the clock (NTP).")));
      break;
    case Step::kTimestampExhausted:
      ereport(ERROR,
              (errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
               errmsg("snowflake IDs have run out: the timestamp field is used up"),
               errdetail("The last time snowflake.timestamp_bits = %d can hold after "
                         "snowflake.epoch is %s; the generator is at %s.",
                         settings.layout.timestamp_bits(),
                         time_text(settings.layout.max_issued_timestamp()),
                         time_text(std::max(settings.layout.timestamp_at(outcome.clock),
                                            outcome.last_timestamp))),
               errhint("Issue new IDs from a cluster with a later snowflake.epoch or a wider "
                       "snowflake.timestamp_bits.")));
      break;
    default:
      elog(ERROR, "snowflake: unexpected generator step %d", static_cast<int>(outcome.step));
  }
}

}  // namespace

IssuedRun issue(int64_t wanted) {
  Generator* generator = require_generator();
  const int64_t node = issuing_node();
  Policy policy;
  policy.max_lead_ms = settings.max_lead_ms;
  policy.clock_wait_budget_ms = settings.max_clock_backward_wait_ms;
  bool waited_for_sequence = false;
  int64_t clock_wait_started_us = -1;

  static const SystemClock clock(settings.layout.epoch_ms());
  for (;;) {
    const Outcome outcome = generator->reserve(clock, node, wanted, policy);
    if (unlikely(outcome.clock_step_ms > 0)) note_clock_step(outcome);
    switch (outcome.step) {
      case Step::kIssued: {
        const int64_t step = generator->layout().sequence_step();
        count(kIdsIssued, outcome.count);
        confirm_issuing_node(node, outcome.timestamp);
        if (unlikely(outcome.refresh_durable)) make_durable(outcome.timestamp, false);
        // The dump's carrier (bound/carrier.cpp): one compare, a read about
        // once a second; a run under a restored bound is reserved again.
        if (unlikely(!carrier_covers(outcome.first_id + (outcome.count - 1) * step)) &&
            !carry(outcome.first_id))
          break;
        return {outcome.first_id, outcome.count, step};
      }
      case Step::kWaitForSequence:
        if (!waited_for_sequence) count(kSequenceWaits);
        waited_for_sequence = true;
        if (outcome.wait_until - outcome.clock <= kSequenceSpinMaxMs)
          spin_until(clock, outcome.wait_until);
        else
          sleep_until(outcome.wait_until, outcome.clock);
        break;
      case Step::kWaitForClock:
        if (clock_wait_started_us < 0) {
          count(kClockWaits);
          clock_wait_started_us = monotonic_us();
        }
        sleep_until(outcome.wait_until, outcome.clock);
        policy.clock_wait_budget_ms =
            std::max<int64_t>(0, settings.max_clock_backward_wait_ms -
                                     (monotonic_us() - clock_wait_started_us) / 1000);
        break;
      case Step::kNeedDurable:
        make_durable(outcome.timestamp, true);
        break;
      default:
        report(outcome);
    }
  }
}

}  // namespace snowflake::pg
