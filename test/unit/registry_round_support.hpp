// The registry worker's round stepped by hand in the unit tests
// (registry_round_test.cpp, registry_round_history_test.cpp): a worker with
// its settings and clocks, the registry's answers, and what to look for in
// an output.
#pragma once

#include <cstdint>

#include "layout.hpp"
#include "lease.hpp"
#include "registry_round.hpp"

namespace snowflake::round_test {

using registry_round::Action;
using registry_round::Answer;
using registry_round::Event;
using registry_round::FloorFrom;
using registry_round::HistoryChange;
using registry_round::Output;
using registry_round::Request;
using registry_round::State;

inline constexpr int64_t kLeaseMs = 30000;
inline constexpr int64_t kLeaseUs = kLeaseMs * 1000;
inline constexpr int64_t kWallMs = 1800000000000;  // 2027-01-15
inline constexpr int64_t kTable = 16385;

// A worker and its registry, stepped by hand.
struct Worker {
  registry_round::Settings settings;
  registry_round::Round round;
  registry_round::Now now;

  // Configured as (1, 3), or automatic (worker_id -1).
  explicit Worker(int worker_id = 3) {
    settings.datacenter_id = worker_id >= 0 ? 1 : -1;
    settings.worker_id = worker_id;
    settings.node = worker_id >= 0 ? settings.layout.node(1, worker_id) : -1;
    settings.lease_ms = kLeaseMs;
    round = registry_round::begin(settings);
    now.mono_us = 5000000000;
    now.wall_ms = kWallMs;
  }

  Output step(const Event& event) { return registry_round::step(&round, settings, event, now); }
  Output tick() { return step(Event{}); }
  Output event(Event::Kind kind) {
    Event event;
    event.kind = kind;
    return step(event);
  }
  Output answer(const Answer& answer) {
    Event event;
    event.kind = Event::kAnswer;
    event.answer = answer;
    return step(event);
  }
  void pass_us(int64_t us) {
    now.mono_us += us;
    now.wall_ms += us / 1000;
  }

  // The registry's answer to the claim in flight, sent now, from a registry
  // that kept its history (the row as the worker last saw it, renewed now).
  Answer claimed(Answer::Outcome outcome = Answer::kClaimed) const {
    Answer answer;
    answer.outcome = outcome;
    answer.sent_us = now.mono_us;
    answer.ids_before_ms = now.wall_ms + kLeaseMs + 1;
    answer.table = kTable;
    answer.existed = true;
    answer.previous_renewed_at_us =
        round.row_seen.renewed_at_us != 0 ? round.row_seen.renewed_at_us : now.wall_ms * 1000 - 1;
    answer.now_us = now.wall_ms * 1000;
    answer.renewed_at_us = answer.previous_renewed_at_us + 1;
    return answer;
  }
  Answer probed(Answer answer, registry_history::Identity identity) const {
    answer.probed = true;
    answer.registry = identity;
    answer.probe_now_ms = now.wall_ms;
    answer.longest_lease_ms = kLeaseMs;
    return answer;
  }

  // Claimed and held after the first tick.
  void hold() {
    const Output asked = tick();
    ASSERT_EQ(asked.request.kind, Request::kClaim);
    (void)answer(claimed());
    ASSERT_EQ(round.state, State::kHeld);
  }
};

inline Answer outcome(Answer::Outcome outcome) {
  Answer answer;
  answer.outcome = outcome;
  return answer;
}

inline Answer picked(int datacenter_id, int worker_id) {
  Answer answer = outcome(Answer::kPicked);
  answer.datacenter_id = datacenter_id;
  answer.worker_id = worker_id;
  return answer;
}

inline int count(const Output& out, Action action) {
  int n = 0;
  for (int i = 0; i < out.count; i++) n += out.actions[i] == action;
  return n;
}

// The order of two actions in an output.
inline bool before(const Output& out, Action first, Action second) {
  int a = -1, b = -1;
  for (int i = 0; i < out.count; i++) {
    if (out.actions[i] == first && a < 0) a = i;
    if (out.actions[i] == second && b < 0) b = i;
  }
  return a >= 0 && b >= 0 && a < b;
}

}  // namespace snowflake::round_test
