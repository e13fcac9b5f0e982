// Generator: one scenario per test, driven by a simulated clock (ms since the
// layout's epoch). Sequence runs and their start offset, the lead, clock steps
// backwards, node changes, the durable bound and restore(), reserve(), the
// layout's limits, and the counting of clock steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "generator.hpp"
#include "layout.hpp"
#include "test_support.hpp"

namespace snowflake {
namespace {

using unit_test::make_policy;
using unit_test::show;
using unit_test::show_id;

constexpr int64_t kClock = 500'000'000;  // about six days after the epoch
constexpr int64_t kBudget = 1000;        // snowflake.max_clock_backward_wait's default

class GeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override { generator_.publish_durable(INT64_MAX); }

  // Calls next() until it stops issuing; returns the IDs and the outcome that stopped it.
  std::vector<int64_t> drain(int64_t clock, int64_t node, const Policy& policy, Outcome* stopped_by,
                             int64_t limit = 100'000) {
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < limit; ++i) {
      const Outcome o = generator_.next(clock, node, policy);
      if (o.step != Step::kIssued) {
        *stopped_by = o;
        return ids;
      }
      EXPECT_EQ(o.count, 1) << show(o);
      ids.push_back(o.first_id);
    }
    ADD_FAILURE() << "next() issued " << limit << " IDs at clock " << clock << " without stopping";
    return ids;
  }

  // Expects a strictly increasing run; returns false (and reports) otherwise.
  bool strictly_increasing(const std::vector<int64_t>& ids, int64_t after = -1) {
    int64_t previous = after;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] <= previous) {
        ADD_FAILURE() << "ID #" << i << " " << show_id(layout_, ids[i])
                      << " is not greater than the previous " << show_id(layout_, previous);
        return false;
      }
      previous = ids[i];
    }
    return true;
  }

  const Layout layout_;
  GeneratorState state_;
  Generator generator_{state_, layout_};
  const int64_t node_ = layout_.node(3, 7);
};

TEST_F(GeneratorTest, SequenceSpreadOfDefaultLayoutIs32) {
  EXPECT_EQ(generator_.sequence_spread(), 32);
  std::set<int64_t> starts;
  for (int64_t ts = 0; ts < 100'000; ++ts) {
    const int64_t start = generator_.sequence_start(ts);
    ASSERT_GE(start, 0) << "sequence_start(" << ts << ")";
    ASSERT_LT(start, 32) << "sequence_start(" << ts << ")";
    starts.insert(start);
  }
  EXPECT_EQ(starts.size(), 32u) << "some offsets in [0, 32) never start a millisecond";
  EXPECT_EQ(generator_.sequence_start(kClock), generator_.sequence_start(kClock))
      << "the start must depend on the timestamp only";
}

TEST(GeneratorSpread, FollowsTheSequenceWidth) {
  struct Case {
    int sequence_bits;
    int64_t spread;
  };
  // At most 32, and at most 1/128 of the sequence space.
  for (const Case c :
       {Case{13, 32}, Case{12, 32}, Case{11, 16}, Case{9, 4}, Case{8, 2}, Case{7, 1}, Case{1, 1}}) {
    GeneratorState state;
    const Layout layout(63 - 10 - c.sequence_bits, 5, 5, c.sequence_bits, 0);
    ASSERT_EQ(Layout::check(layout.timestamp_bits(), 5, 5, c.sequence_bits), LayoutCheck::kOk);
    const Generator generator(state, layout);
    EXPECT_EQ(generator.sequence_spread(), c.spread) << "sequence_bits " << c.sequence_bits;
    for (int64_t ts = 0; ts < 1000; ++ts) {
      const int64_t start = generator.sequence_start(ts);
      ASSERT_TRUE(start >= 0 && start < c.spread)
          << "sequence_bits " << c.sequence_bits << ": sequence_start(" << ts << ") = " << start;
    }
  }
}

TEST_F(GeneratorTest, FixedClockRunsTheSequenceThenWaitsForTheNextMillisecond) {
  const Policy policy = make_policy(0, kBudget);
  Outcome stopped;
  const std::vector<int64_t> ids = drain(kClock, node_, policy, &stopped);
  ASSERT_FALSE(ids.empty());
  const int64_t start = generator_.sequence_start(kClock);
  EXPECT_EQ(ids.front(), layout_.compose(kClock, node_, start)) << show_id(layout_, ids.front());
  EXPECT_EQ(ids.back(), layout_.compose(kClock, node_, 4095)) << show_id(layout_, ids.back());
  EXPECT_EQ(static_cast<int64_t>(ids.size()), 4096 - start);
  for (size_t i = 1; i < ids.size(); ++i) {
    ASSERT_EQ(ids[i], ids[i - 1] + 1) << "IDs of one millisecond are consecutive, at #" << i;
  }

  EXPECT_EQ(stopped.step, Step::kWaitForSequence) << show(stopped);
  EXPECT_EQ(stopped.wait_until, kClock + 1) << show(stopped);
  EXPECT_EQ(stopped.timestamp, kClock + 1) << show(stopped);
  EXPECT_EQ(stopped.last_timestamp, kClock) << show(stopped);
  EXPECT_EQ(state_.last_id.load(), ids.back()) << "a wait must not change last_id";

  // Waiting again at the same reading changes nothing.
  EXPECT_EQ(generator_.next(kClock, node_, policy).step, Step::kWaitForSequence);

  const Outcome after = generator_.next(kClock + 1, node_, policy);
  ASSERT_EQ(after.step, Step::kIssued) << show(after);
  EXPECT_EQ(after.first_id,
            layout_.compose(kClock + 1, node_, generator_.sequence_start(kClock + 1)));
  EXPECT_GT(after.first_id, ids.back());
}

TEST_F(GeneratorTest, FullMillisecondYieldsAtLeast4050Ids) {
  const Policy policy = make_policy(0, kBudget);
  int64_t previous = -1;
  int64_t fewest = INT64_MAX;
  for (int64_t clock = kClock; clock < kClock + 300; ++clock) {
    Outcome stopped;
    const std::vector<int64_t> ids = drain(clock, node_, policy, &stopped);
    ASSERT_EQ(stopped.step, Step::kWaitForSequence) << show(stopped);
    ASSERT_TRUE(strictly_increasing(ids, previous)) << "clock " << clock;
    EXPECT_GE(ids.size(), 4050u) << "millisecond " << clock;
    fewest = std::min<int64_t>(fewest, static_cast<int64_t>(ids.size()));
    previous = ids.back();
  }
  EXPECT_GE(fewest, 4096 - 31);
}

TEST_F(GeneratorTest, MaxLeadBorrowsTheNextMillisecondsWithoutWaiting) {
  constexpr int64_t kLead = 3;
  const Policy policy = make_policy(kLead, kBudget);
  Outcome stopped;
  const std::vector<int64_t> ids = drain(kClock, node_, policy, &stopped);
  ASSERT_TRUE(strictly_increasing(ids));
  std::set<int64_t> milliseconds;
  for (int64_t id : ids) {
    const int64_t ts = layout_.timestamp_of(id);
    ASSERT_GE(ts, kClock) << show_id(layout_, id);
    ASSERT_LE(ts, kClock + kLead) << "lead above max_lead: " << show_id(layout_, id);
    ASSERT_EQ(layout_.node_of(id), node_) << show_id(layout_, id);
    milliseconds.insert(ts);
  }
  EXPECT_EQ(milliseconds.size(), 4u) << "expected the clock's millisecond and 3 borrowed ones";
  int64_t expected_count = 0;
  for (int64_t ts = kClock; ts <= kClock + kLead; ++ts)
    expected_count += 4096 - generator_.sequence_start(ts);
  EXPECT_EQ(static_cast<int64_t>(ids.size()), expected_count);

  EXPECT_EQ(stopped.step, Step::kWaitForSequence) << show(stopped);
  EXPECT_EQ(stopped.timestamp, kClock + kLead + 1) << show(stopped);
  EXPECT_EQ(stopped.wait_until, kClock + 1) << show(stopped);

  const Outcome after = generator_.next(kClock + 1, node_, policy);
  ASSERT_EQ(after.step, Step::kIssued) << show(after);
  EXPECT_EQ(layout_.timestamp_of(after.first_id), kClock + kLead + 1);
  EXPECT_GT(after.first_id, ids.back());
}

struct BackwardCase {
  int64_t step_ms;
  int64_t max_lead_ms;
  bool millisecond_used_up;  // the last millisecond's sequence is exhausted
};

// The clock steps back by step_ms after an ID at kClock; the budget covers the
// step, so the generator asks to wait until its candidate is within max_lead.
TEST(GeneratorClockBackwards, WithinBudgetWaitsForClock) {
  const Layout layout;
  const int64_t node = 5;
  for (const BackwardCase c :
       {BackwardCase{100, 0, false}, BackwardCase{100, 0, true}, BackwardCase{100, 20, false},
        BackwardCase{100, 20, true}, BackwardCase{1, 0, false}, BackwardCase{2, 1, true},
        BackwardCase{5000, 4999, false}}) {
    SCOPED_TRACE("step " + std::to_string(c.step_ms) + " ms, max_lead " +
                 std::to_string(c.max_lead_ms) + " ms" +
                 (c.millisecond_used_up ? ", used up" : ""));
    GeneratorState state;
    Generator generator(state, layout);
    generator.publish_durable(INT64_MAX);
    const Policy policy = make_policy(c.max_lead_ms, c.step_ms);  // budget == step
    const Outcome first = generator.reserve(kClock, node, c.millisecond_used_up ? 4096 : 1, policy);
    ASSERT_EQ(first.step, Step::kIssued) << show(first);

    const int64_t clock = kClock - c.step_ms;
    const Outcome o = generator.next(clock, node, policy);
    const int64_t candidate = kClock + (c.millisecond_used_up ? 1 : 0);
    EXPECT_EQ(o.step, Step::kWaitForClock) << show(o);
    EXPECT_EQ(o.wait_until, candidate - c.max_lead_ms) << show(o);
    EXPECT_EQ(o.last_timestamp, kClock) << show(o);
    EXPECT_EQ(o.timestamp, candidate) << show(o);
    EXPECT_EQ(o.clock_step_ms, c.step_ms) << show(o);
    EXPECT_EQ(state.last_id.load(), first.first_id + (first.count - 1)) << "a wait issued an ID";

    // Once the clock reaches wait_until the generator issues, above the last ID.
    const Outcome after = generator.next(o.wait_until, node, policy);
    ASSERT_EQ(after.step, Step::kIssued) << show(after);
    EXPECT_GT(after.first_id, first.first_id + (first.count - 1)) << show(after);
    EXPECT_EQ(layout.timestamp_of(after.first_id), candidate) << show(after);
  }
}

TEST(GeneratorClockBackwards, BeyondBudgetIsClockBehind) {
  const Layout layout;
  struct Case {
    int64_t step_ms;
    int64_t max_lead_ms;
    int64_t budget_ms;
    Step expected;
  };
  for (const Case c : {
           Case{1, 0, 0, Step::kClockBehind},  // Twitter's IdWorker: refuse at once
           Case{100, 0, 99, Step::kClockBehind},
           Case{100, 0, 100, Step::kWaitForClock},
           Case{100, 30, 69, Step::kClockBehind},  // 100 - 30 = 70 > 69
           Case{100, 30, 70, Step::kWaitForClock},
           Case{1'500, 0, 1'000, Step::kClockBehind},
           Case{86'400'000, 0, 60'000, Step::kClockBehind},
       }) {
    SCOPED_TRACE("step " + std::to_string(c.step_ms) + " ms, max_lead " +
                 std::to_string(c.max_lead_ms) + " ms, budget " + std::to_string(c.budget_ms) +
                 " ms");
    GeneratorState state;
    Generator generator(state, layout);
    generator.publish_durable(INT64_MAX);
    const Policy policy = make_policy(c.max_lead_ms, c.budget_ms);
    const Outcome first = generator.next(kClock, 1, policy);
    ASSERT_EQ(first.step, Step::kIssued) << show(first);
    const Outcome o = generator.next(kClock - c.step_ms, 1, policy);
    EXPECT_EQ(o.step, c.expected) << show(o);
    EXPECT_EQ(o.last_timestamp, kClock) << show(o);
    EXPECT_EQ(o.clock_step_ms, c.step_ms) << show(o);
    EXPECT_EQ(state.last_id.load(), first.first_id) << "a refusal issued an ID";
  }
}

TEST(GeneratorClockBackwards, MaxLeadCoveringTheStepIssuesAtOnce) {
  const Layout layout;
  for (int64_t step : {int64_t{1}, int64_t{50}, int64_t{100}}) {
    SCOPED_TRACE("step " + std::to_string(step) + " ms, max_lead 100 ms");
    GeneratorState state;
    Generator generator(state, layout);
    generator.publish_durable(INT64_MAX);
    const Policy policy = make_policy(100, 0);  // no wait budget at all
    const Outcome first = generator.next(kClock, 9, policy);
    ASSERT_EQ(first.step, Step::kIssued) << show(first);

    // The clock steps back, then runs forward again past the old reading.
    int64_t previous = first.first_id;
    for (int64_t clock = kClock - step; clock <= kClock + 5; ++clock) {
      for (int i = 0; i < 3; ++i) {
        const Outcome o = generator.next(clock, 9, policy);
        ASSERT_EQ(o.step, Step::kIssued) << "clock " << clock << ": " << show(o);
        ASSERT_GT(o.first_id, previous) << "clock " << clock << ": " << show_id(layout, o.first_id)
                                        << " after " << show_id(layout, previous);
        EXPECT_GE(o.timestamp, clock);
        EXPECT_LE(o.timestamp - clock, 100) << show(o);
        previous = o.first_id;
      }
    }
    // Past the old reading the IDs carry the clock again.
    EXPECT_EQ(layout.timestamp_of(previous), kClock + 5);
  }
}

TEST_F(GeneratorTest, LargerNodeInTheSameMillisecondStaysInIt) {
  const Policy policy = make_policy(0, kBudget);
  const Outcome a = generator_.next(kClock, 5, policy);
  ASSERT_EQ(a.step, Step::kIssued) << show(a);
  const Outcome b = generator_.next(kClock, 7, policy);
  ASSERT_EQ(b.step, Step::kIssued) << show(b);
  EXPECT_GT(b.first_id, a.first_id);
  EXPECT_EQ(b.first_id, layout_.compose(kClock, 7, generator_.sequence_start(kClock)))
      << show_id(layout_, b.first_id);
}

TEST_F(GeneratorTest, SmallerNodeInTheSameMillisecondMovesToTheNext) {
  const Outcome a = generator_.next(kClock, 7, make_policy(0, kBudget));
  ASSERT_EQ(a.step, Step::kIssued) << show(a);

  // With no lead allowed it must wait for the next millisecond...
  const Outcome waiting = generator_.next(kClock, 5, make_policy(0, kBudget));
  EXPECT_EQ(waiting.step, Step::kWaitForSequence) << show(waiting);
  EXPECT_EQ(waiting.wait_until, kClock + 1) << show(waiting);

  // ...and with a lead of 1 ms it borrows it.
  const Outcome b = generator_.next(kClock, 5, make_policy(1, kBudget));
  ASSERT_EQ(b.step, Step::kIssued) << show(b);
  EXPECT_GT(b.first_id, a.first_id);
  EXPECT_EQ(b.first_id, layout_.compose(kClock + 1, 5, generator_.sequence_start(kClock + 1)))
      << show_id(layout_, b.first_id);

  // The same node again continues its sequence.
  const Outcome c = generator_.next(kClock + 1, 5, make_policy(0, kBudget));
  ASSERT_EQ(c.step, Step::kIssued) << show(c);
  EXPECT_EQ(c.first_id, b.first_id + 1);
}

TEST_F(GeneratorTest, NodeChangesKeepIdsIncreasing) {
  const Policy policy = make_policy(2, kBudget);
  const std::vector<int64_t> nodes = {0, layout_.max_node(), 1, 1, 512, 511, 0, layout_.max_node()};
  int64_t previous = -1;
  for (int64_t clock = kClock; clock < kClock + 20; ++clock) {
    for (int64_t node : nodes) {
      const Outcome o = generator_.next(clock, node, policy);
      if (o.step == Step::kWaitForSequence) continue;
      ASSERT_EQ(o.step, Step::kIssued) << "node " << node << ": " << show(o);
      ASSERT_GT(o.first_id, previous)
          << show_id(layout_, o.first_id) << " after " << show_id(layout_, previous);
      EXPECT_EQ(layout_.node_of(o.first_id), node) << show_id(layout_, o.first_id);
      previous = o.first_id;
    }
  }
}

TEST(GeneratorDurable, FreshStateNeedsADurableBoundFirst) {
  GeneratorState state;
  const Layout layout;
  Generator generator(state, layout);
  const Outcome o = generator.next(kClock, 1, make_policy(0, kBudget));
  EXPECT_EQ(o.step, Step::kNeedDurable) << show(o);
  EXPECT_EQ(o.timestamp, kClock) << show(o);
  EXPECT_EQ(state.last_id.load(), 0) << "nothing may be issued before a bound is durable";

  generator.publish_durable(generator.durable_until_after(o.timestamp, 1000));
  const Outcome issued = generator.next(kClock, 1, make_policy(0, kBudget));
  ASSERT_EQ(issued.step, Step::kIssued) << show(issued);
  EXPECT_EQ(layout.timestamp_of(issued.first_id), kClock);
  EXPECT_LT(layout.timestamp_of(issued.first_id), state.durable_until.load());
}

TEST(GeneratorDurable, NoIdReachesTheBoundAndRefreshStartsWithinTheMargin) {
  GeneratorState state;
  const Layout layout;
  Generator generator(state, layout);
  constexpr int64_t kInterval = kDurableIntervalMs;  // 1 ms units
  constexpr int64_t kMargin = kInterval / 2;
  ASSERT_EQ(generator.durable_interval(), kInterval);
  const Policy policy = make_policy(0, kBudget);
  const int64_t until = generator.durable_until_after(kClock);
  EXPECT_EQ(until, kClock + kInterval);
  generator.publish_durable(until);
  EXPECT_EQ(state.durable_until.load(), until);

  for (int64_t clock = kClock; clock < kClock + kInterval; ++clock) {
    const Outcome o = generator.next(clock, layout.max_node(), policy);
    ASSERT_EQ(o.step, Step::kIssued) << show(o);
    ASSERT_LT(layout.timestamp_of(o.first_id), until) << show_id(layout, o.first_id);
    const bool in_margin = clock > kClock + kInterval - kMargin;
    ASSERT_EQ(o.refresh_durable, in_margin)
        << "clock " << clock << ", bound's millisecond " << until << ", margin " << kMargin;
  }
  // The bound's own millisecond cannot be used until a later bound is durable.
  const Outcome blocked = generator.next(kClock + kInterval, 0, policy);
  EXPECT_EQ(blocked.step, Step::kNeedDurable) << show(blocked);
  EXPECT_LT(layout.timestamp_of(state.last_id.load()), until);

  generator.publish_durable(generator.durable_until_after(blocked.timestamp, kInterval));
  const Outcome after = generator.next(kClock + kInterval, 0, policy);
  ASSERT_EQ(after.step, Step::kIssued) << show(after);
  EXPECT_GE(layout.timestamp_of(after.first_id), until);
  EXPECT_FALSE(after.refresh_durable) << show(after);
}

TEST(GeneratorDurable, ARunFillsItsMillisecondAndTheNextWaitsForTheBound) {
  GeneratorState state;
  const Layout layout;
  Generator generator(state, layout);
  generator.publish_durable(kClock + 1);
  const Policy lead = make_policy(10, kBudget);
  const Outcome o = generator.reserve(kClock, 4, 10'000, lead);
  ASSERT_EQ(o.step, Step::kIssued) << show(o);
  EXPECT_EQ(o.count, layout.max_sequence() + 1 - generator.sequence_start(kClock)) << show(o);
  const Outcome next = generator.next(kClock, 4, lead);
  EXPECT_EQ(next.step, Step::kNeedDurable) << show(next);
  EXPECT_EQ(next.timestamp, kClock + 1) << show(next);
}

TEST(GeneratorDurable, PublishedBoundOnlyGrows) {
  GeneratorState state;
  Generator generator(state, Layout());
  generator.publish_durable(1000);
  generator.publish_durable(500);
  EXPECT_EQ(state.durable_until.load(), 1000);
  generator.publish_durable(INT64_MAX);
  EXPECT_EQ(state.durable_until.load(), INT64_MAX);
}

TEST(GeneratorDurable, DurableUntilAfterSaturatesAtTheLayoutsEnd) {
  GeneratorState state;
  const Layout layout;
  const Generator generator(state, layout);
  const int64_t end = layout.max_timestamp() + 1;
  EXPECT_EQ(generator.durable_until_after(0, 1), 1);
  EXPECT_EQ(generator.durable_until_after(10, 5), 15);
  EXPECT_EQ(generator.durable_until_after(layout.max_timestamp() - 5, 5), layout.max_timestamp());
  EXPECT_EQ(generator.durable_until_after(layout.max_timestamp() - 5, 6), end);
  EXPECT_EQ(generator.durable_until_after(layout.max_timestamp(), 1000), end);
}

TEST(GeneratorDurable, IdBoundRoundTripsAndRoundsUpToAMillisecond) {
  const Layout layout;
  EXPECT_EQ(layout.id_bound(0), 0u);
  EXPECT_EQ(layout.id_bound(kClock), static_cast<uint64_t>(layout.min_id(kClock)));
  EXPECT_EQ(layout.id_bound(layout.max_timestamp() + 1), uint64_t{1} << 63);
  EXPECT_EQ(layout.timestamp_bound(layout.id_bound(kClock)), kClock);
  // An ID bound inside a millisecond covers that whole millisecond.
  EXPECT_EQ(layout.timestamp_bound(static_cast<uint64_t>(layout.compose(kClock, 7, 9))),
            kClock + 1);
  EXPECT_EQ(layout.timestamp_bound(uint64_t{1} << 63), layout.max_timestamp() + 1);
  EXPECT_EQ(layout.timestamp_bound(UINT64_MAX), layout.max_timestamp() + 1);
  // Another layout reads the same ID bound as a bound on its own timestamps:
  // its IDs at or past that millisecond are all above every ID below the bound.
  const Layout narrow(39, 5, 7, 12, kDefaultEpochMs);
  const uint64_t bound = layout.id_bound(kClock);
  const int64_t until = narrow.timestamp_bound(bound);
  EXPECT_GE(static_cast<uint64_t>(narrow.min_id(until)), bound);
  EXPECT_LT(static_cast<uint64_t>(narrow.min_id(until - 1)), bound);
}

// A restart: the old process issued IDs of milliseconds before the bound; the
// new state knows only the bound, and the clock now reads far earlier.
class GeneratorRestoreTest : public ::testing::Test {
 protected:
  static constexpr int64_t kBoundTimestamp = kClock + 1000;
  static constexpr int64_t kClockAfterRestart = kClock - 3'600'000;  // an hour back

  void SetUp() override { generator_.restore(kBoundTimestamp); }

  const Layout layout_;
  GeneratorState state_;
  Generator generator_{state_, layout_};
};

TEST_F(GeneratorRestoreTest, RaisesLastIdAndTheBound) {
  EXPECT_EQ(state_.last_id.load(), layout_.max_id(kBoundTimestamp - 1));
  EXPECT_EQ(state_.durable_until.load(), kBoundTimestamp);
  // restore() never lowers anything.
  generator_.restore(kBoundTimestamp - 100);
  generator_.restore(0);
  generator_.restore(-5);
  EXPECT_EQ(state_.last_id.load(), layout_.max_id(kBoundTimestamp - 1));
  EXPECT_EQ(state_.durable_until.load(), kBoundTimestamp);
}

// A floor (another node's IDs, from the registry) raises the next ID but
// makes nothing durable: issuing above it still needs a durable bound.
TEST(GeneratorFloorTest, RaisesLastIdButNotTheBound) {
  const Layout layout;
  GeneratorState state;
  Generator generator(state, layout);
  generator.publish_durable(kClock + 10);
  generator.raise_floor(kClock + 500);
  EXPECT_EQ(state.last_id.load(), layout.max_id(kClock + 499));
  EXPECT_EQ(state.durable_until.load(), kClock + 10);
  const Outcome o = generator.next(kClock, 1, make_policy(86'400'000, 0));
  EXPECT_EQ(o.step, Step::kNeedDurable) << show(o);
  EXPECT_EQ(o.timestamp, kClock + 500) << show(o);
  // Never lowered; 0 and negative floors are ignored.
  generator.raise_floor(kClock);
  generator.raise_floor(0);
  generator.raise_floor(-3);
  EXPECT_EQ(state.last_id.load(), layout.max_id(kClock + 499));
}

TEST_F(GeneratorRestoreTest, ClockFarBehindWaitsOrRefusesByPolicy) {
  const Outcome refused = generator_.next(kClockAfterRestart, 1, make_policy(0, kBudget));
  EXPECT_EQ(refused.step, Step::kClockBehind) << show(refused);
  EXPECT_EQ(refused.timestamp, kBoundTimestamp) << show(refused);

  const Outcome waits = generator_.next(kClockAfterRestart, 1, make_policy(0, 4'000'000));
  EXPECT_EQ(waits.step, Step::kWaitForClock) << show(waits);
  EXPECT_EQ(waits.wait_until, kBoundTimestamp) << show(waits);

  const Outcome waits_less =
      generator_.next(kClockAfterRestart, 1, make_policy(600'000, 3'100'000));
  EXPECT_EQ(waits_less.step, Step::kWaitForClock) << show(waits_less);
  EXPECT_EQ(waits_less.wait_until, kBoundTimestamp - 600'000) << show(waits_less);
  EXPECT_EQ(state_.last_id.load(), layout_.max_id(kBoundTimestamp - 1));
}

TEST_F(GeneratorRestoreTest, LargeMaxLeadIssuesAtTheBoundsMillisecond) {
  const Policy policy = make_policy(86'400'000, 0);
  Outcome o = generator_.next(kClockAfterRestart, 1, policy);
  // Issuing in the restored bound's millisecond first needs a later durable bound.
  ASSERT_EQ(o.step, Step::kNeedDurable) << show(o);
  generator_.publish_durable(generator_.durable_until_after(o.timestamp, 1000));
  o = generator_.next(kClockAfterRestart, 1, policy);
  ASSERT_EQ(o.step, Step::kIssued) << show(o);
  EXPECT_GE(o.first_id, layout_.min_id(kBoundTimestamp)) << show_id(layout_, o.first_id);
  EXPECT_EQ(layout_.timestamp_of(o.first_id), kBoundTimestamp) << show_id(layout_, o.first_id);
}

TEST_F(GeneratorRestoreTest, NextIdIsAtLeastTheBoundForEveryNode) {
  for (int64_t node : {int64_t{0}, int64_t{1}, layout_.max_node()}) {
    GeneratorState state;
    Generator generator(state, layout_);
    generator.restore(kBoundTimestamp);
    generator.publish_durable(INT64_MAX);
    const Outcome o = generator.next(kBoundTimestamp, node, make_policy(0, 0));
    ASSERT_EQ(o.step, Step::kIssued) << "node " << node << ": " << show(o);
    EXPECT_GE(o.first_id, layout_.min_id(kBoundTimestamp)) << show_id(layout_, o.first_id);
  }
  // Restored to the layout's end: nothing is left to issue.
  GeneratorState state;
  Generator generator(state, layout_);
  generator.restore(INT64_MAX);
  EXPECT_EQ(state.last_id.load(), INT64_MAX);
  const Outcome o = generator.next(layout_.max_timestamp(), 0, make_policy(0, 0));
  EXPECT_EQ(o.step, Step::kTimestampExhausted) << show(o);
}

TEST_F(GeneratorTest, ReserveReturnsRunsWithinOneMillisecond) {
  const Policy policy = make_policy(0, kBudget);
  constexpr int64_t kWanted = 1000;
  int64_t clock = kClock;
  int64_t covered = 0;
  int64_t previous = -1;
  std::vector<int64_t> counts;
  while (covered < 10'000) {
    const Outcome o = generator_.reserve(clock, node_, kWanted, policy);
    if (o.step == Step::kWaitForSequence) {
      clock = o.wait_until;
      continue;
    }
    ASSERT_EQ(o.step, Step::kIssued) << show(o);
    ASSERT_GE(o.count, 1) << show(o);
    ASSERT_LE(o.count, kWanted) << show(o);
    ASSERT_GT(o.first_id, previous) << show(o);
    const int64_t last = o.first_id + (o.count - 1);
    EXPECT_EQ(layout_.timestamp_of(o.first_id), layout_.timestamp_of(last)) << show(o);
    EXPECT_EQ(layout_.node_of(last), node_) << show(o);
    EXPECT_EQ(state_.last_id.load(), last) << show(o);
    counts.push_back(o.count);
    covered += o.count;
    previous = last;
  }
  // A millisecond of 4,096 - start IDs comes as 1000, 1000, 1000, 1000, rest.
  ASSERT_GE(counts.size(), 5u);
  EXPECT_EQ(counts[0], kWanted);
  EXPECT_EQ(counts[4], 4096 - generator_.sequence_start(kClock) - 4 * kWanted);
}

TEST_F(GeneratorTest, ReserveOfOneEqualsNext) {
  const Policy policy = make_policy(0, kBudget);
  const Outcome a = generator_.reserve(kClock, node_, 1, policy);
  const Outcome b = generator_.next(kClock, node_, policy);
  ASSERT_EQ(a.step, Step::kIssued);
  ASSERT_EQ(b.step, Step::kIssued);
  EXPECT_EQ(a.count, 1);
  EXPECT_EQ(b.first_id, a.first_id + 1);
}

TEST_F(GeneratorTest, ReserveEverythingTakesTheRestOfTheMillisecond) {
  const Outcome o = generator_.reserve(kClock, node_, INT64_MAX, make_policy(0, kBudget));
  ASSERT_EQ(o.step, Step::kIssued) << show(o);
  EXPECT_EQ(o.count, 4096 - generator_.sequence_start(kClock)) << show(o);
  EXPECT_EQ(layout_.sequence_of(o.first_id + (o.count - 1)), 4095);
}

TEST_F(GeneratorTest, NegativeClockIsBeforeTheEpoch) {
  const Outcome good = generator_.next(kClock, node_, make_policy(0, kBudget));
  ASSERT_EQ(good.step, Step::kIssued);
  for (int64_t clock : {int64_t{-1}, int64_t{-1000}, INT64_MIN}) {
    const Outcome o = generator_.next(clock, node_, make_policy(INT64_MAX, INT64_MAX));
    EXPECT_EQ(o.step, Step::kClockBeforeEpoch) << show(o);
    EXPECT_EQ(o.clock, clock) << show(o);
  }
  EXPECT_EQ(state_.last_id.load(), good.first_id);
  EXPECT_EQ(state_.clock_high_water.load(), kClock);
  EXPECT_EQ(state_.clock_steps.load(), 0) << "a reading before the epoch is not a clock step";
}

TEST_F(GeneratorTest, ClockAtZeroIsTheEpochItself) {
  const Outcome o = generator_.next(0, node_, make_policy(0, kBudget));
  ASSERT_EQ(o.step, Step::kIssued) << show(o);
  EXPECT_EQ(layout_.timestamp_of(o.first_id), 0);
  EXPECT_GT(o.first_id, 0);
}

TEST_F(GeneratorTest, LastMillisecondOfTheLayoutIsExhausted) {
  const int64_t last_ms = layout_.max_timestamp();
  const Policy policy = make_policy(0, kBudget);
  const Outcome run = generator_.reserve(last_ms, node_, INT64_MAX, policy);
  ASSERT_EQ(run.step, Step::kIssued) << show(run);
  EXPECT_EQ(layout_.timestamp_of(run.first_id), last_ms);
  const Outcome o = generator_.next(last_ms, node_, policy);
  EXPECT_EQ(o.step, Step::kTimestampExhausted) << "waiting cannot help: " << show(o);
  EXPECT_EQ(o.timestamp, last_ms + 1) << show(o);

  for (int64_t clock : {last_ms + 1, last_ms + 1000, INT64_MAX}) {
    const Outcome past = generator_.next(clock, node_, policy);
    EXPECT_EQ(past.step, Step::kTimestampExhausted) << show(past);
  }
}

TEST(GeneratorLimits, NarrowTimestampLayoutRunsOut) {
  const Layout layout(3, 0, 30, 30, 0);  // milliseconds 0..7
  ASSERT_EQ(Layout::check(3, 0, 30, 30), LayoutCheck::kOk);
  GeneratorState state;
  Generator generator(state, layout);
  generator.publish_durable(INT64_MAX);
  const Policy policy = make_policy(0, kBudget);
  int64_t previous = -1;
  for (int64_t clock = 0; clock <= 7; ++clock) {
    const Outcome o = generator.reserve(clock, 12345, 10, policy);
    ASSERT_EQ(o.step, Step::kIssued) << show(o);
    ASSERT_GT(o.first_id, previous);
    previous = o.first_id + (o.count - 1);
  }
  EXPECT_EQ(generator.next(8, 12345, policy).step, Step::kTimestampExhausted);

  // A lead cannot borrow past the last millisecond either.
  const Outcome rest = generator.reserve(7, 12345, INT64_MAX, make_policy(1000, 0));
  ASSERT_EQ(rest.step, Step::kIssued) << show(rest);
  EXPECT_EQ(layout.sequence_of(rest.first_id + (rest.count - 1)), layout.max_sequence());
  const Outcome o = generator.next(7, 12345, make_policy(1000, 0));
  EXPECT_EQ(o.step, Step::kTimestampExhausted) << show(o);
}

// At the layout's last millisecond the largest node's last ID is INT64_MAX,
// and a durable bound must be able to cover it: the generator issues it, then
// says the layout is exhausted; it never loops the caller on kNeedDurable.
TEST_F(GeneratorTest, LargestNodeAtTheLastMillisecondDoesNotAskForAnImpossibleBound) {
  const int64_t last_ms = layout_.max_timestamp();
  const int64_t node = layout_.max_node();
  const Policy policy = make_policy(0, kBudget);
  const Outcome run = generator_.reserve(last_ms, node, INT64_MAX, policy);
  ASSERT_EQ(run.step, Step::kIssued) << show(run);
  Outcome o;
  for (int attempt = 0; attempt < 3; ++attempt) {
    o = generator_.next(last_ms, node, policy);
    if (o.step != Step::kNeedDurable) break;
    // What a caller does on kNeedDurable.
    generator_.publish_durable(generator_.durable_until_after(o.timestamp, 1000));
  }
  EXPECT_TRUE(o.step == Step::kTimestampExhausted ||
              (o.step == Step::kIssued && o.first_id == INT64_MAX))
      << "after the run ending at " << show_id(layout_, run.first_id + (run.count - 1))
      << " and durable_until " << state_.durable_until.load() << ", next() gives " << show(o);
}

// A step is identified by the high-water mark it fell from.
TEST_F(GeneratorTest, ClockStepIsCountedOnceHoweverManyCallsSeeIt) {
  const Policy policy = make_policy(86'400'000, 0);  // issue whatever the clock does
  Generator other_backend(state_, layout_);

  Outcome o = generator_.next(1000, node_, policy);
  EXPECT_EQ(o.clock_step_ms, 0) << show(o);
  EXPECT_EQ(o.clock_high_water, 1000) << show(o);
  EXPECT_FALSE(o.first_to_see_step);

  o = generator_.next(900, node_, policy);
  EXPECT_EQ(o.step, Step::kIssued) << show(o);
  EXPECT_EQ(o.clock_step_ms, 100) << show(o);
  EXPECT_EQ(o.clock_high_water, 1000) << show(o);
  EXPECT_TRUE(o.first_to_see_step) << show(o);
  EXPECT_EQ(state_.clock_steps.load(), 1);
  EXPECT_EQ(state_.largest_clock_step_ms.load(), 100);

  for (int64_t clock : {int64_t{900}, int64_t{950}, int64_t{999}}) {
    o = generator_.next(clock, node_, policy);
    EXPECT_EQ(o.clock_step_ms, 1000 - clock) << show(o);
    EXPECT_FALSE(o.first_to_see_step) << show(o);
    o = other_backend.next(clock, node_, policy);
    EXPECT_FALSE(o.first_to_see_step) << "another backend: " << show(o);
  }
  EXPECT_EQ(state_.clock_steps.load(), 1);
  EXPECT_EQ(state_.largest_clock_step_ms.load(), 100);

  // Falling further below the same high-water mark is the same step, but a
  // larger one: not counted again, yet the largest step grows.
  o = other_backend.next(700, node_, policy);
  EXPECT_EQ(o.clock_step_ms, 300) << show(o);
  EXPECT_FALSE(o.first_to_see_step) << show(o);
  EXPECT_EQ(state_.clock_steps.load(), 1);
  EXPECT_EQ(state_.largest_clock_step_ms.load(), 300);

  // Reaching the high-water mark again is not a step.
  o = generator_.next(1000, node_, policy);
  EXPECT_EQ(o.clock_step_ms, 0) << show(o);

  // A new high-water mark, then a step from it: counted again.
  generator_.next(2000, node_, policy);
  o = other_backend.next(1970, node_, policy);
  EXPECT_EQ(o.clock_step_ms, 30) << show(o);
  EXPECT_TRUE(o.first_to_see_step) << show(o);
  EXPECT_EQ(state_.clock_steps.load(), 2);
  EXPECT_EQ(state_.largest_clock_step_ms.load(), 300) << "the largest step stays the largest";

  generator_.next(3000, node_, policy);
  o = generator_.next(1500, node_, policy);
  EXPECT_TRUE(o.first_to_see_step) << show(o);
  EXPECT_EQ(state_.clock_steps.load(), 3);
  EXPECT_EQ(state_.largest_clock_step_ms.load(), 1500);
}

TEST_F(GeneratorTest, ClockStepIsObservedWhateverTheOutcome) {
  generator_.next(5000, node_, make_policy(0, kBudget));
  const Outcome refused = generator_.next(1000, node_, make_policy(0, 0));
  EXPECT_EQ(refused.step, Step::kClockBehind) << show(refused);
  EXPECT_EQ(refused.clock_step_ms, 4000) << show(refused);
  EXPECT_TRUE(refused.first_to_see_step) << show(refused);
  EXPECT_EQ(state_.clock_steps.load(), 1);
  EXPECT_EQ(state_.largest_clock_step_ms.load(), 4000);
}

// A clock whose coarse and precise readings the test sets, counting the
// precise ones (the dear ones the coarse reading is there to spare).
class TwoSpeedClock final : public Clock {
 public:
  int64_t now() const noexcept override {
    ++precise_reads;
    return precise;
  }
  Reading coarse() const noexcept override { return {coarse_earliest, coarse_earliest + slack}; }

  int64_t precise = 0;
  int64_t coarse_earliest = 0;
  int64_t slack = 16;
  mutable int precise_reads = 0;
};

class GeneratorCoarseClockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    generator_.publish_durable(INT64_MAX);
    // The generator runs 500 ms ahead of the clock, as it does at full rate
    // with a generous max_lead.
    ASSERT_EQ(generator_.next(kClock + 500, kNode, make_policy(1000, kBudget)).step, Step::kIssued);
    clock_.precise = kClock + 3;
    clock_.coarse_earliest = kClock;  // the last tick, 3 ms ago
  }

  static constexpr int64_t kNode = 5;
  const Layout layout_;
  GeneratorState state_;
  Generator generator_{state_, layout_};
  TwoSpeedClock clock_;
};

TEST_F(GeneratorCoarseClockTest, AheadOfTheClockItIssuesOnTheCoarseReadingAlone) {
  int64_t previous = state_.last_id.load();
  for (int i = 0; i < 10'000; ++i) {
    const Outcome o = generator_.next(clock_, kNode, make_policy(1000, kBudget));
    ASSERT_EQ(o.step, Step::kIssued) << show(o);
    ASSERT_GT(o.first_id, previous);
    ASSERT_LE(layout_.timestamp_of(o.first_id) - clock_.precise, 1000) << "lead beyond max_lead";
    previous = o.first_id;
  }
  EXPECT_EQ(clock_.precise_reads, 0) << "the coarse reading decided every call";
}

TEST_F(GeneratorCoarseClockTest, ThePreciseClockDecidesWhenItMayHaveReachedTheGenerator) {
  clock_.coarse_earliest = kClock + 490;  // latest 506: possibly past the last ID's 500
  clock_.precise = kClock + 505;
  const Outcome o = generator_.next(clock_, kNode, make_policy(1000, kBudget));
  ASSERT_EQ(o.step, Step::kIssued) << show(o);
  EXPECT_EQ(clock_.precise_reads, 1);
  EXPECT_EQ(layout_.timestamp_of(o.first_id), kClock + 505) << "the clock's millisecond, not 500";
}

TEST_F(GeneratorCoarseClockTest, ThePreciseClockDecidesWhenTheCoarseLeadIsTooLong) {
  // By the coarse reading the lead is 500 ms, over max_lead 400; the precise
  // clock is later and the lead fits.
  clock_.precise = kClock + 150;
  const Outcome o = generator_.next(clock_, kNode, make_policy(400, kBudget));
  ASSERT_EQ(o.step, Step::kIssued) << show(o);
  EXPECT_EQ(clock_.precise_reads, 1);
  // And when the precise clock agrees that the lead is too long, it waits.
  clock_.precise = kClock + 50;
  const Outcome waits = generator_.next(clock_, kNode, make_policy(400, kBudget));
  EXPECT_EQ(waits.step, Step::kWaitForClock) << show(waits);
  EXPECT_EQ(waits.clock, kClock + 50) << "waits are decided on the precise clock";
}

TEST_F(GeneratorCoarseClockTest, WithNoLeadTheCoarseReadingNeverDecides) {
  GeneratorState state;
  Generator generator(state, layout_);
  generator.publish_durable(INT64_MAX);
  TwoSpeedClock clock;
  clock.precise = kClock;
  clock.coarse_earliest = kClock - 3;
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(generator.next(clock, kNode, make_policy(0, kBudget)).step, Step::kIssued);
  }
  EXPECT_EQ(clock.precise_reads, 100);
}

TEST_F(GeneratorCoarseClockTest, CoarseReadingsRaiseTheHighWaterMarkAndShowRealSteps) {
  // The mark follows the coarse reading's earliest time: never past the clock.
  clock_.coarse_earliest = kClock + 100;
  clock_.precise = kClock + 103;
  ASSERT_EQ(generator_.next(clock_, kNode, make_policy(1000, kBudget)).step, Step::kIssued);
  EXPECT_EQ(state_.clock_high_water.load(), kClock + 500) << "set by the setup's precise reading";
  // A coarse reading whose latest time is below the mark is a step back.
  clock_.coarse_earliest = kClock + 200;  // latest 216 < 500
  clock_.precise = kClock + 203;
  const Outcome o = generator_.next(clock_, kNode, make_policy(1000, kBudget));
  ASSERT_EQ(o.step, Step::kIssued) << show(o);
  EXPECT_EQ(clock_.precise_reads, 0);
  EXPECT_EQ(o.clock_step_ms, 500 - 216) << show(o);
  EXPECT_EQ(state_.clock_steps.load(), 1);
}

}  // namespace
}  // namespace snowflake
