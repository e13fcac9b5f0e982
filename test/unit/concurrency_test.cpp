// Generator under concurrency: several threads, each with its own Generator
// over one shared GeneratorState (as backends share one in shared memory),
// driven by the real clock. Every ID must be unique and each thread's IDs
// strictly increasing, in the default layout and in layouts that count 10 ms
// and put the sequence above the node; a clock step seen by every thread is
// counted once.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "clock.hpp"
#include "generator.hpp"
#include "layout.hpp"
#include "layout_text.hpp"
#include "test_support.hpp"

namespace snowflake {
namespace {

using unit_test::make_policy;
using unit_test::show;
using unit_test::show_id;

constexpr int64_t kTotalIds = 500'000;
constexpr int64_t kGiveUpAfterUs = 20'000'000;

struct ThreadResult {
  std::vector<int64_t> ids;
  int64_t waits = 0;
  int64_t clock_behind = 0;
  std::string error;  // empty unless the thread stopped on an unexpected outcome
};

// Each thread calls reserve() with the real clock until it holds its share of
// `total` IDs, spinning while told to wait.
std::vector<ThreadResult> run_threads(int threads, int64_t wanted, const Policy& policy,
                                      const Layout& layout = Layout(), int64_t total = kTotalIds) {
  GeneratorState state;
  Generator setup(state, layout);
  setup.publish_durable(layout.max_issued_timestamp());
  const int64_t node = layout.node(std::min<int64_t>(17, layout.max_datacenter_id()),
                                   std::min<int64_t>(4, layout.max_worker_id()));
  const int64_t per_thread = total / threads;

  std::vector<ThreadResult> results(static_cast<size_t>(threads));
  std::atomic<int> ready{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      ThreadResult& result = results[static_cast<size_t>(t)];
      result.ids.reserve(static_cast<size_t>(per_thread));
      Generator generator(state, layout);
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      const int64_t deadline = monotonic_us() + kGiveUpAfterUs;
      const SystemClock clock(layout.epoch_ms());
      while (static_cast<int64_t>(result.ids.size()) < per_thread) {
        const int64_t want =
            std::min<int64_t>(wanted, per_thread - static_cast<int64_t>(result.ids.size()));
        const Outcome o = generator.reserve(clock, node, want, policy);
        if (o.step == Step::kIssued) {
          for (int64_t i = 0; i < o.count; ++i)
            result.ids.push_back(o.first_id + i * layout.sequence_step());
          continue;
        }
        // The real clock may also be stepped by NTP while the test runs.
        if (o.step == Step::kClockBehind) ++result.clock_behind;
        if (o.step == Step::kWaitForSequence || o.step == Step::kWaitForClock ||
            o.step == Step::kClockBehind) {
          ++result.waits;
          if (monotonic_us() < deadline) continue;
        }
        result.error = "thread " + std::to_string(t) + " stopped: " + show(o);
        return;
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  return results;
}

void expect_unique_and_ordered(const std::vector<ThreadResult>& results,
                               const Layout& layout = Layout(), int64_t total = kTotalIds) {
  std::vector<int64_t> all;
  for (size_t t = 0; t < results.size(); ++t) {
    const ThreadResult& result = results[t];
    EXPECT_TRUE(result.error.empty()) << result.error;
    for (size_t i = 1; i < result.ids.size(); ++i) {
      if (result.ids[i] <= result.ids[i - 1]) {
        ADD_FAILURE() << "thread " << t << ": ID #" << i << " " << show_id(layout, result.ids[i])
                      << " is not greater than its previous " << show_id(layout, result.ids[i - 1]);
        break;
      }
    }
    all.insert(all.end(), result.ids.begin(), result.ids.end());
  }
  EXPECT_EQ(static_cast<int64_t>(all.size()), total);
  std::sort(all.begin(), all.end());
  const auto duplicate = std::adjacent_find(all.begin(), all.end());
  EXPECT_TRUE(duplicate == all.end())
      << "ID issued twice: " << (duplicate == all.end() ? "" : show_id(layout, *duplicate));
  // They carry the real time: the first and the last are within a minute of now.
  const int64_t now = unix_time_ms() - layout.epoch_ms();
  ASSERT_FALSE(all.empty());
  EXPECT_LE(now - layout.start_ms(layout.timestamp_of(all.front())), 60'000)
      << show_id(layout, all.front());
  EXPECT_LE(layout.start_ms(layout.timestamp_of(all.back())) - now, 60'000)
      << show_id(layout, all.back());
}

TEST(GeneratorConcurrency, TwoThreadsIssueUniqueIncreasingIds) {
  expect_unique_and_ordered(run_threads(2, 1, make_policy(0, 1000)));
}

TEST(GeneratorConcurrency, FourThreadsIssueUniqueIncreasingIds) {
  expect_unique_and_ordered(run_threads(4, 1, make_policy(0, 1000)));
}

TEST(GeneratorConcurrency, FourThreadsReservingRunsWithALead) {
  expect_unique_and_ordered(run_threads(4, 37, make_policy(5, 1000)));
}

// Sonyflake's layout: 10 ms units, 256 IDs each, the sequence above the
// machine ID (runs are 2^16 apart).
TEST(GeneratorConcurrency, FourThreadsInSonyflakesLayout) {
  const Layout layout(find_preset("sonyflake")->parts);
  expect_unique_and_ordered(run_threads(4, 1, make_policy(0, 1000), layout, 40'000), layout,
                            40'000);
  expect_unique_and_ordered(run_threads(4, 9, make_policy(30, 1000), layout, 40'000), layout,
                            40'000);
}

// The JavaScript-safe layout: 53 bits, 10 ms units.
TEST(GeneratorConcurrency, FourThreadsInTheJavaScriptLayoutStayBelow2To53) {
  const Layout layout(find_preset("javascript")->parts);
  const std::vector<ThreadResult> results =
      run_threads(4, 1, make_policy(0, 1000), layout, 100'000);
  expect_unique_and_ordered(results, layout, 100'000);
  for (const ThreadResult& result : results)
    for (int64_t id : result.ids) ASSERT_LT(id, int64_t{1} << 53);
}

// Every thread sees the same backward step, many times: it is counted once,
// and exactly one call is told it was the first to see it.
TEST(GeneratorConcurrency, ClockStepSeenByEveryThreadIsCountedOnce) {
  const Layout layout;
  GeneratorState state;
  Generator setup(state, layout);
  setup.publish_durable(INT64_MAX);
  const Policy policy = make_policy(86'400'000, 0);
  ASSERT_EQ(setup.next(100'000, 1, policy).step, Step::kIssued);

  constexpr int kThreads = 4;
  constexpr int kCallsPerThread = 20'000;
  std::atomic<int> ready{0};
  std::atomic<int> first_to_see{0};
  std::atomic<int> wrong_step_size{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&] {
      Generator generator(state, layout);
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (int i = 0; i < kCallsPerThread; ++i) {
        const Outcome o = generator.next(99'000, 1, policy);
        if (o.first_to_see_step) first_to_see.fetch_add(1);
        if (o.clock_step_ms != 1000) wrong_step_size.fetch_add(1);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  EXPECT_EQ(state.clock_steps.load(), 1);
  EXPECT_EQ(state.largest_clock_step_ms.load(), 1000);
  EXPECT_EQ(first_to_see.load(), 1);
  EXPECT_EQ(wrong_step_size.load(), 0);
}

// With no lead and no wait budget (Twitter's policy), threads that overtake
// each other on the real clock must never see the clock "behind": each reads
// the clock after the shared state, so no reading is older than the last ID.
TEST(GeneratorConcurrency, OvertakingThreadsSeeNoFalseClockStep) {
  const Layout layout;
  GeneratorState state;
  Generator setup(state, layout);
  setup.publish_durable(INT64_MAX);
  const Policy policy = make_policy(0, 0);
  constexpr int kThreads = 4;
  constexpr int kIdsPerThread = 250'000;
  std::atomic<int> ready{0};
  std::atomic<int64_t> clock_behind{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&] {
      Generator generator(state, layout);
      const SystemClock clock(layout.epoch_ms());
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (int issued = 0; issued < kIdsPerThread;) {
        const Outcome o = generator.next(clock, 3, policy);
        if (o.step == Step::kIssued) ++issued;
        if (o.step == Step::kClockBehind) clock_behind.fetch_add(1);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  EXPECT_EQ(clock_behind.load(), 0) << "calls refused for a clock behind that never stepped";
  EXPECT_EQ(state.clock_steps.load(), 0) << "steps counted although the clock never stepped";
}

// restore() while another thread issues: a caller must never issue below the
// restored bound, whatever the interleaving. Each round starts with nothing
// durable, so the only way to issue is under the bound restore() raises; the
// floor must be visible by then. The issuing thread's clock is an hour behind
// the bound and max_lead is huge, so with the floor in place every call asks
// for a durable bound (kNeedDurable) and none is ever issued.
TEST(GeneratorConcurrency, RestoreNeverLetsACallerIssueBelowTheFloor) {
  const Layout layout;
  constexpr int64_t kBound = 500'000'000'000;
  constexpr int64_t kClockBehindBound = kBound - 3'600'000;
  constexpr int kRounds = 1'000'000;
  const Policy policy = make_policy(86'400'000, 0);
  GeneratorState state;
  std::atomic<int> started{-1};   // round the issuer may start calling in
  std::atomic<int> restored{-1};  // round whose restore() has returned
  std::atomic<int> finished{-1};  // round the issuer has stopped calling in
  std::atomic<int64_t> issued_below{0};
  std::thread issuer([&] {
    Generator generator(state, layout);
    for (int r = 0; r < kRounds; ++r) {
      while (started.load() < r) std::this_thread::yield();
      while (restored.load() < r) {
        const Outcome o = generator.next(kClockBehindBound, 1, policy);
        if (o.step == Step::kIssued && o.timestamp < kBound) issued_below.fetch_add(1);
      }
      finished.store(r);
    }
  });
  Generator restorer(state, layout);
  for (int r = 0; r < kRounds; ++r) {
    while (finished.load() < r - 1) std::this_thread::yield();
    state.last_id.store(0);
    state.durable_until.store(0);
    started.store(r);
    restorer.restore(kBound);
    restored.store(r);
  }
  issuer.join();
  EXPECT_EQ(issued_below.load(), 0) << "IDs issued below a restored bound";
}

}  // namespace
}  // namespace snowflake
