// Benchmarks of the ID generator in src/core: the cost of one ID, apart from
// PostgreSQL. Every benchmark issues one ID per iteration through
// Generator::next on one GeneratorState shared by all its threads, as the
// backends of one node share it in shared memory, with the durability step
// switched off (publish_durable(INT64_MAX)). items_per_second is the rate of
// the whole node; ns per ID is its inverse.
//
// The ways the clock is driven:
//
// - injected_advancing (1 thread, max_lead 0, the default setting): the clock
//   is a counter that moves 1 ms every 4,000 calls, so the generator takes
//   its ordinary paths (the next sequence number in the same millisecond,
//   and a fresh millisecond every 4,000 IDs) but never has to wait: 4,000 is
//   below the 4,064 IDs a millisecond holds at least (4,096 minus the
//   sequence start, at most 31). No clock is read, so the figure is the
//   generator's own cost. One thread only: two threads with a counter each
//   would bring readings that disagree (the one behind looks like a
//   backward clock step) and 8,000 calls per injected millisecond, over the
//   cap.
// - injected_fixed_lead (1 and 2 threads): the clock is a constant and
//   max_lead is practically unbounded, so the generator borrows the next
//   millisecond every time one is used up (the logical-clock mode) and never
//   waits, however many threads call. This is the way to contend two threads
//   on the compare-and-swap without a clock and without the cap.
// - real_clock (1 and 2 threads, max_lead 0): the wall clock (SystemClock,
//   as the extension passes it) is read on every call, and the caller spins,
//   re-reading the clock, when told to wait for the next millisecond. This
//   is what a node can do: bounded by 4,096 IDs per ms, i.e. at least
//   244 ns per ID.
// - real_clock_unbounded_lead (1 thread): the wall clock with max_lead
//   practically unbounded, so the cap never binds: the generator plus one
//   clock reading per ID. clock_read times the reading alone.
//
// base32_encode, public_id_encode and public_id_decode time the text forms
// of an ID alone, one call per iteration (public IDs: FF1 under an AES-128
// key, no tweak; issue 40).
//
// Counters: allocs_per_id counts global operator new calls per ID (the core
// must allocate nothing per call); state_bytes is the size of the shared
// state; waits_per_id (real clock) the clock re-reads per ID.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <new>

#include "base32.hpp"
#include "clock.hpp"
#include "generator.hpp"
#include "layout.hpp"
#include "public_id.hpp"

namespace {

// Allocations by this thread while it probes (see run()); other threads, the
// framework's included, are not counted.
thread_local bool t_counting_allocations = false;
thread_local int64_t t_allocations = 0;

}  // namespace

void* operator new(std::size_t size) {
  if (t_counting_allocations) ++t_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace {

using snowflake::Generator;
using snowflake::GeneratorState;
using snowflake::Outcome;
using snowflake::Policy;
using snowflake::Step;

constexpr snowflake::Layout kLayout{};
constexpr int64_t kNode = kLayout.node(1, 1);
// 2025-01-01 00:00:00 UTC, in ms since the layout's epoch.
constexpr int64_t kInjectedStart = 1735689600000 - snowflake::kDefaultEpochMs;
constexpr int kCallsPerInjectedMs = 4000;
// Large enough never to be reached: the lead grows 1 ms per 4,096 IDs.
constexpr int64_t kUnboundedLead = int64_t{1} << 40;
constexpr int kAllocationProbeCalls = 10000;

GeneratorState g_state;

// Runs in thread 0 before the timed loop; Google Benchmark holds the other
// threads at the loop's start until thread 0 arrives there. A fresh state
// each time, made durable for ever (no durability step in the figures).
void reset_shared_state(benchmark::State& state) {
  if (state.thread_index() != 0) return;
  g_state.~GeneratorState();
  new (&g_state) GeneratorState();
  Generator(g_state, kLayout).publish_durable(INT64_MAX);
}

// Times issue_one(), which issues one ID and says whether it could, then
// counts the allocations of kAllocationProbeCalls more calls outside the timed
// loop (inside it, the framework's own few allocations would blur the count).
template <typename IssueOne>
void run(benchmark::State& state, IssueOne&& issue_one) {
  for (auto _ : state) {
    if (!issue_one()) {
      state.SkipWithError("the generator refused to issue");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() != 0) return;
  t_allocations = 0;
  t_counting_allocations = true;
  for (int i = 0; i < kAllocationProbeCalls; ++i) issue_one();
  t_counting_allocations = false;
  state.counters["allocs_per_id"] = static_cast<double>(t_allocations) / kAllocationProbeCalls;
  state.counters["state_bytes"] = static_cast<double>(sizeof(GeneratorState));
}

void BM_InjectedAdvancing(benchmark::State& state) {
  reset_shared_state(state);
  Generator generator(g_state, kLayout);
  const Policy policy;  // max_lead 0
  int64_t clock = kInjectedStart;
  int calls_left = kCallsPerInjectedMs;
  run(state, [&] {
    if (--calls_left == 0) {
      ++clock;
      calls_left = kCallsPerInjectedMs;
    }
    // Not const: Google Benchmark 1.8 deprecates DoNotOptimize() of a const
    // reference (forky's libbenchmark-dev fails the -Werror build on it).
    Outcome outcome = generator.next(clock, kNode, policy);
    benchmark::DoNotOptimize(outcome.first_id);
    return outcome.step == Step::kIssued;
  });
}

void BM_InjectedFixedLead(benchmark::State& state) {
  reset_shared_state(state);
  Generator generator(g_state, kLayout);
  Policy policy;
  policy.max_lead_ms = kUnboundedLead;
  run(state, [&] {
    Outcome outcome = generator.next(kInjectedStart, kNode, policy);
    benchmark::DoNotOptimize(outcome.first_id);
    return outcome.step == Step::kIssued;
  });
}

void BM_RealClock(benchmark::State& state) {
  reset_shared_state(state);
  Generator generator(g_state, kLayout);
  Policy policy;  // max_lead 0
  policy.clock_wait_budget_ms = 1000;
  const snowflake::SystemClock clock(kLayout.epoch_ms());
  int64_t waits = 0;
  run(state, [&] {
    for (;;) {
      Outcome outcome = generator.next(clock, kNode, policy);
      if (outcome.step == Step::kIssued) {
        benchmark::DoNotOptimize(outcome.first_id);
        return true;
      }
      if (outcome.step != Step::kWaitForSequence && outcome.step != Step::kWaitForClock)
        return false;
      ++waits;  // spin: read the clock again
    }
  });
  state.counters["waits_per_id"] =
      benchmark::Counter(static_cast<double>(waits), benchmark::Counter::kAvgIterations);
}

// The wall clock without the cap: what reading it adds to the generator.
void BM_RealClockUnboundedLead(benchmark::State& state) {
  reset_shared_state(state);
  Generator generator(g_state, kLayout);
  Policy policy;
  policy.max_lead_ms = kUnboundedLead;
  const snowflake::SystemClock clock(kLayout.epoch_ms());
  run(state, [&] {
    Outcome outcome = generator.next(clock, kNode, policy);
    benchmark::DoNotOptimize(outcome.first_id);
    return outcome.step == Step::kIssued;
  });
}

// The clock alone: one reading per iteration.
void BM_ClockRead(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(snowflake::unix_time_ms());
  state.SetItemsProcessed(state.iterations());
}

// The text forms, per call (no ID issued): base32 beside public IDs (FF1 of
// the 63 bits, then base32), each way, with an AES-128 key and no tweak.
void BM_Base32Encode(benchmark::State& state) {
  char text[snowflake::base32::kWidth];
  int64_t id = kInjectedStart << 22;
  for (auto _ : state) {
    snowflake::base32::encode(id++, text);
    benchmark::DoNotOptimize(text);
  }
  state.SetItemsProcessed(state.iterations());
}

snowflake::public_id::KeyRing& bench_ring() {
  static snowflake::public_id::KeyRing ring;
  if (ring.empty()) {
    static const char kFile[] = "A 2B7E151628AED2A6ABF7158809CF4F3C\n";
    snowflake::public_id::load_key_file(kFile, sizeof(kFile) - 1, &ring);
  }
  return ring;
}

void BM_PublicIdEncode(benchmark::State& state) {
  const snowflake::public_id::KeyRing& ring = bench_ring();
  char text[snowflake::public_id::kWidth];
  int64_t id = kInjectedStart << 22;
  for (auto _ : state) {
    if (snowflake::public_id::encode(ring, id++, nullptr, 0, text) != snowflake::ff1::Status::kOk) {
      state.SkipWithError("encode failed");
      break;
    }
    benchmark::DoNotOptimize(text);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_PublicIdDecode(benchmark::State& state) {
  const snowflake::public_id::KeyRing& ring = bench_ring();
  constexpr int kTexts = 1024;
  static char texts[kTexts][snowflake::public_id::kWidth];
  for (int i = 0; i < kTexts; i++)
    snowflake::public_id::encode(ring, (kInjectedStart << 22) + i, nullptr, 0, texts[i]);
  int next = 0;
  for (auto _ : state) {
    snowflake::public_id::DecodeResult result =
        snowflake::public_id::decode(ring, texts[next], snowflake::public_id::kWidth, nullptr, 0);
    if (result.status != snowflake::public_id::DecodeStatus::kOk) {
      state.SkipWithError("decode failed");
      break;
    }
    benchmark::DoNotOptimize(result.id);
    next = (next + 1) % kTexts;
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_InjectedAdvancing)->Name("injected_advancing")->Threads(1)->UseRealTime();
BENCHMARK(BM_InjectedFixedLead)->Name("injected_fixed_lead")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_RealClock)->Name("real_clock")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_RealClockUnboundedLead)->Name("real_clock_unbounded_lead")->Threads(1)->UseRealTime();
BENCHMARK(BM_ClockRead)->Name("clock_read")->Threads(1)->UseRealTime();
BENCHMARK(BM_Base32Encode)->Name("base32_encode")->Threads(1)->UseRealTime();
BENCHMARK(BM_PublicIdEncode)->Name("public_id_encode")->Threads(1)->UseRealTime();
BENCHMARK(BM_PublicIdDecode)->Name("public_id_decode")->Threads(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
