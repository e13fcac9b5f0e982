// Generator property tests over random runs: whatever the clock does (random
// walk with backward jumps), whatever the policy and the node, no ID is ever
// issued twice or out of order, none reaches the durable bound, and restarts
// that keep only the durable bound carry on above every earlier ID. The same
// in every preset and in random valid layouts (field orders, time units,
// widths that add up to fewer than 63 bits or to 64). Also the spread of
// low-rate IDs over `id % n`.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "generator.hpp"
#include "layout.hpp"
#include "layout_text.hpp"
#include "test_support.hpp"

namespace snowflake {
namespace {

using unit_test::make_policy;
using unit_test::show;
using unit_test::show_id;

template <typename T, size_t N>
T pick(std::mt19937_64& rng, const std::array<T, N>& choices) {
  return choices[rng() % N];
}

int64_t between(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

struct WalkStats {
  int64_t issued = 0;
  int64_t waits = 0;
  int64_t clock_behind = 0;
  int64_t need_durable = 0;
  int64_t restarts = 0;
  int64_t backward_jumps = 0;
};

// One random run of `calls` calls on `layout`. Waits are simulated by moving
// the clock to wait_until; kClockBehind by an operator fixing the clock.
void random_walk(const Layout& layout, uint64_t seed, int calls, WalkStats* stats) {
  std::mt19937_64 rng(seed);
  auto state = std::make_unique<GeneratorState>();
  auto generator = std::make_unique<Generator>(*state, layout);
  int64_t clock = 10'000'000;
  int64_t last_issued = -1;
  int64_t node = 0;
  int failures = 0;
  constexpr int kMaxFailures = 10;

  for (int call = 0; call < calls && failures < kMaxFailures; ++call) {
    // The clock: mostly still or a little forward, sometimes a jump either way.
    const uint64_t move = rng() % 1000;
    if (move < 400) {
      // stays
    } else if (move < 900) {
      clock += between(rng, 1, 3);
    } else if (move < 960) {
      clock -= between(rng, 1, 20);
      ++stats->backward_jumps;
    } else if (move < 985) {
      clock -= between(rng, 21, 5000);
      ++stats->backward_jumps;
    } else {
      clock += between(rng, 10, 5000);
    }
    clock = std::max<int64_t>(clock, 0);

    if (rng() % 20 == 0) {
      node = rng() % 4 == 0
                 ? between(rng, 0, layout.max_node())
                 : std::clamp<int64_t>(pick(rng, std::array<int64_t, 4>{0, 1, layout.max_node() - 1,
                                                                        layout.max_node()}),
                                       0, layout.max_node());
    }
    if (rng() % 2000 == 0) {
      // A restart: only the durable bound survives.
      const int64_t until = state->durable_until.load();
      auto fresh = std::make_unique<GeneratorState>();
      generator = std::make_unique<Generator>(*fresh, layout);
      state = std::move(fresh);
      generator->restore(until);
      ++stats->restarts;
    }
    const Policy policy =
        make_policy(pick(rng, std::array<int64_t, 6>{0, 0, 1, 5, 50, 10'000}),
                    pick(rng, std::array<int64_t, 5>{0, 10, 1000, 5000, 100'000}));
    const int64_t wanted = rng() % 4 == 0 ? between(rng, 1, 200) : 1;
    const int64_t until_before = state->durable_until.load();

    const Outcome o = generator->reserve(clock, node, wanted, policy);
    const std::string context = "call " + std::to_string(call) + ", seed " + std::to_string(seed) +
                                ", node " + std::to_string(node) + ", max_lead " +
                                std::to_string(policy.max_lead_ms) + ", wanted " +
                                std::to_string(wanted) + ": " + show(o);
    switch (o.step) {
      case Step::kIssued: {
        const int64_t last = o.first_id + (o.count - 1) * layout.sequence_step();
        const int64_t ts = layout.timestamp_of(o.first_id);
        const bool ok = o.count >= 1 && o.count <= wanted && o.first_id > last_issued &&
                        ts < until_before && ts == layout.timestamp_of(last) &&
                        layout.node_of(o.first_id) == node && layout.node_of(last) == node &&
                        layout.sequence_of(last) - layout.sequence_of(o.first_id) == o.count - 1 &&
                        layout.holds(last) && last > 0 && ts >= layout.timestamp_at(clock) &&
                        layout.start_ms(ts) - clock <= policy.max_lead_ms &&
                        state->last_id.load() == last;
        if (!ok) {
          ++failures;
          ADD_FAILURE() << "bad run " << show_id(layout, o.first_id) << " .. "
                        << show_id(layout, last) << " after " << show_id(layout, last_issued)
                        << ", clock " << clock << ", durable until " << until_before << "; "
                        << context;
        }
        last_issued = last;
        ++stats->issued;
        if (o.refresh_durable) {
          generator->publish_durable(generator->durable_until_after(ts, between(rng, 1, 2000)));
        }
        break;
      }
      case Step::kWaitForSequence:
        if (o.wait_until <= clock || o.wait_until - clock > layout.unit_ms()) {
          ++failures;
          ADD_FAILURE() << "a sequence wait is at most one unit of time; " << context;
        }
        clock = o.wait_until;
        ++stats->waits;
        break;
      case Step::kWaitForClock:
        // The clock's part of the wait is within the budget; the used-up unit
        // after the last ID's may add at most one unit.
        if (o.wait_until <= clock ||
            o.wait_until - clock > policy.clock_wait_budget_ms + layout.unit_ms()) {
          ++failures;
          ADD_FAILURE() << "wait outside the budget " << policy.clock_wait_budget_ms << "; "
                        << context;
        }
        clock = o.wait_until;
        ++stats->waits;
        break;
      case Step::kClockBehind:
        if (layout.start_ms(o.last_timestamp) - clock - policy.max_lead_ms <=
            policy.clock_wait_budget_ms) {
          ++failures;
          ADD_FAILURE() << "refused although the budget covers the wait; " << context;
        }
        clock = o.wait_until;
        ++stats->clock_behind;
        break;
      case Step::kNeedDurable:
        if (o.timestamp < until_before) {
          ++failures;
          ADD_FAILURE() << "asked for a bound while below it (" << until_before << "); " << context;
        }
        generator->publish_durable(
            generator->durable_until_after(o.timestamp, between(rng, 1, 2000)));
        ++stats->need_durable;
        break;
      default:
        ++failures;
        ADD_FAILURE() << "unexpected step; " << context;
    }
    if (layout.timestamp_of(state->last_id.load()) >= state->durable_until.load() &&
        last_issued >= 0) {
      ++failures;
      ADD_FAILURE() << "last_id " << state->last_id.load() << " at or after durable_until "
                    << state->durable_until.load() << "; " << context;
    }
  }
}

TEST(GeneratorProperty, RandomClockWalkNeverReissuesOrGoesBackwardsDefaultLayout) {
  WalkStats stats;
  random_walk(Layout(), 1, 300'000, &stats);
  // The walk must actually have visited the interesting states.
  EXPECT_GT(stats.issued, 100'000);
  EXPECT_GT(stats.waits, 1000);
  EXPECT_GT(stats.clock_behind, 100);
  EXPECT_GT(stats.need_durable, 100);
  EXPECT_GT(stats.restarts, 50);
  EXPECT_GT(stats.backward_jumps, 10'000);
}

// 32 IDs per millisecond, so sequences run out all the time.
TEST(GeneratorProperty, RandomClockWalkNeverReissuesOrGoesBackwardsNarrowSequence) {
  WalkStats stats;
  random_walk(Layout(46, 5, 7, 5, 0), 2, 300'000, &stats);
  EXPECT_GT(stats.issued, 100'000);
  EXPECT_GT(stats.waits, 10'000);
  EXPECT_GT(stats.restarts, 50);
}

// A flat node field, more nodes than sequence values.
TEST(GeneratorProperty, RandomClockWalkNeverReissuesOrGoesBackwardsFlatNodes) {
  WalkStats stats;
  random_walk(Layout(41, 0, 14, 8, kDefaultEpochMs), 3, 300'000, &stats);
  EXPECT_GT(stats.issued, 100'000);
  EXPECT_GT(stats.restarts, 50);
}

// Every preset: the walk issues, waits, restarts, in the preset's own order
// and unit.
TEST(GeneratorProperty, RandomClockWalkNeverReissuesOrGoesBackwardsInEveryPreset) {
  for (std::size_t i = 0; i < preset_count(); i++) {
    const Preset& preset = presets()[i];
    SCOPED_TRACE(preset.name);
    WalkStats stats;
    random_walk(Layout(preset.parts), 100 + i, 60'000, &stats);
    EXPECT_GT(stats.issued, 20'000);
    EXPECT_GT(stats.need_durable, 10);
    EXPECT_GT(stats.restarts, 5);
  }
}

// A random valid layout: any order, a unit of 1 ms to 1 s, widths that leave
// enough time for the walk (which starts at 10,000 s after the epoch).
LayoutParts random_layout(std::mt19937_64& rng) {
  for (;;) {
    LayoutParts parts;
    parts.unit_ms = pick(rng, std::array<int64_t, 6>{1, 1, 2, 10, 100, 1000});
    parts.timestamp_bits = static_cast<int>(between(rng, 30, 50));
    parts.datacenter_bits = static_cast<int>(rng() % 3 == 0 ? 0 : between(rng, 1, 8));
    parts.worker_bits = static_cast<int>(rng() % 4 == 0 ? 0 : between(rng, 1, 12));
    parts.sequence_bits = static_cast<int>(between(rng, 1, 14));
    std::array<Field, 3> order{Field::kDatacenter, Field::kWorker, Field::kSequence};
    std::shuffle(order.begin(), order.end(), rng);
    parts.order = FieldOrder{order[0], order[1], order[2]};
    parts.epoch_ms = 0;
    if (Layout::check(parts) == LayoutCheck::kOk) return parts;
  }
}

TEST(GeneratorProperty, RandomClockWalkNeverReissuesOrGoesBackwardsInRandomLayouts) {
  std::mt19937_64 rng(19);
  for (int i = 0; i < 24; i++) {
    const LayoutParts parts = random_layout(rng);
    char text[kLayoutTextSize];
    describe_layout(parts, text, sizeof(text));
    SCOPED_TRACE(text);
    WalkStats stats;
    random_walk(Layout(parts), 200 + static_cast<uint64_t>(i), 30'000, &stats);
    EXPECT_GT(stats.issued, 10'000);
  }
}

// One ID per simulated millisecond, the clock advancing 1-5 ms between calls:
// `id % 16` and `id % 2` must not be skewed (sequences starting at 0 would make
// every ID even).
TEST(GeneratorProperty, LowRateIdsSpreadOverResidues) {
  const Layout layout;
  GeneratorState state;
  Generator generator(state, layout);
  generator.publish_durable(INT64_MAX);
  std::mt19937_64 rng(16);
  constexpr int kIds = 5000;
  std::array<int, 16> by_16{};
  int odd = 0;
  int64_t clock = 50'000'000;
  const int64_t node = layout.node(2, 9);
  for (int i = 0; i < kIds; ++i) {
    clock += between(rng, 1, 5);
    const Outcome o = generator.next(clock, node, make_policy(0, 0));
    ASSERT_EQ(o.step, Step::kIssued) << show(o);
    ++by_16[static_cast<size_t>(o.first_id % 16)];
    odd += static_cast<int>(o.first_id % 2);
  }
  for (size_t residue = 0; residue < by_16.size(); ++residue) {
    const double share = 100.0 * by_16[residue] / kIds;
    EXPECT_GE(share, 3.0) << "id % 16 == " << residue << ": " << by_16[residue] << " of " << kIds;
    EXPECT_LE(share, 10.0) << "id % 16 == " << residue << ": " << by_16[residue] << " of " << kIds;
  }
  const double odd_share = 100.0 * odd / kIds;
  EXPECT_GE(odd_share, 45.0) << odd << " odd IDs of " << kIds;
  EXPECT_LE(odd_share, 55.0) << odd << " odd IDs of " << kIds;
}

// The same in 10 ms units (the javascript preset's 10-bit sequence spreads
// over 0-7): one ID per unit, the clock advancing 10-50 ms between calls.
TEST(GeneratorProperty, LowRateIdsSpreadOverResiduesInTenMillisecondUnits) {
  const Layout layout(find_preset("javascript")->parts);
  GeneratorState state;
  Generator generator(state, layout);
  ASSERT_EQ(generator.sequence_spread(), 8);
  generator.publish_durable(INT64_MAX >> layout.timestamp_shift());
  std::mt19937_64 rng(8);
  constexpr int kIds = 4000;
  std::array<int, 8> by_8{};
  int64_t clock = 50'000'000;
  for (int i = 0; i < kIds; ++i) {
    clock += between(rng, 10, 50);
    const Outcome o = generator.next(clock, 3, make_policy(0, 0));
    ASSERT_EQ(o.step, Step::kIssued) << show(o);
    ++by_8[static_cast<size_t>(o.first_id % 8)];
  }
  for (size_t residue = 0; residue < by_8.size(); ++residue) {
    const double share = 100.0 * by_8[residue] / kIds;
    EXPECT_GE(share, 8.0) << "id % 8 == " << residue << ": " << by_8[residue] << " of " << kIds;
    EXPECT_LE(share, 17.0) << "id % 8 == " << residue << ": " << by_8[residue] << " of " << kIds;
  }
}

}  // namespace
}  // namespace snowflake
