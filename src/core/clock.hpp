// Clocks, in milliseconds.
//
// The generator reads time through a Clock it is given, so tests can drive it
// through any sequence of readings. The extension gives it the wall clock
// (what IDs carry, and what an operator or NTP may step); waits are measured
// on the monotonic clock, which stepping the wall clock does not move.
#pragma once

#include <cstdint>
#include <ctime>

namespace snowflake {

inline int64_t unix_time_ms() noexcept {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return int64_t{now.tv_sec} * 1000 + now.tv_nsec / 1000000;
}

inline int64_t monotonic_us() noexcept {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1000000 + now.tv_nsec / 1000;
}

// A reading with its uncertainty: the time lies in [earliest, latest].
struct Reading {
  int64_t earliest;
  int64_t latest;
};

// A source of clock readings, in ms since the layout's epoch.
class Clock {
 public:
  // The time, to the millisecond.
  virtual int64_t now() const noexcept = 0;
  // A cheaper reading, good to a few milliseconds; by default the precise one.
  virtual Reading coarse() const noexcept {
    const int64_t reading = now();
    return {reading, reading};
  }

 protected:
  ~Clock() = default;
};

// The wall clock, in ms since `epoch_ms` (ms since the Unix epoch). Its coarse
// reading is CLOCK_REALTIME_COARSE, the time of the kernel's last tick: about
// a quarter of the cost of a precise reading, and never ahead of the precise
// clock. It lags by up to a tick, more when a tick is late (twice a tick was
// seen on a loaded VM), so `latest` allows four ticks. Should a tick be later
// still, a decision taken on the coarse reading leaves an ID's timestamp
// behind the clock by the excess; uniqueness and order do not depend on it.
class SystemClock final : public Clock {
 public:
  explicit SystemClock(int64_t epoch_ms) noexcept : epoch_ms_(epoch_ms) {
    timespec tick;
    clock_getres(CLOCK_REALTIME_COARSE, &tick);
    coarse_slack_ms_ = (4 * (int64_t{tick.tv_sec} * 1000000000 + tick.tv_nsec) + 999999) / 1000000;
  }
  int64_t now() const noexcept override { return unix_time_ms() - epoch_ms_; }
  Reading coarse() const noexcept override {
    timespec tick;
    clock_gettime(CLOCK_REALTIME_COARSE, &tick);
    const int64_t earliest = int64_t{tick.tv_sec} * 1000 + tick.tv_nsec / 1000000 - epoch_ms_;
    return {earliest, earliest + coarse_slack_ms_};
  }

 private:
  int64_t epoch_ms_;
  int64_t coarse_slack_ms_;
};

// A clock that always reads the same: for tests and benchmarks that drive
// time themselves.
class FixedClock final : public Clock {
 public:
  explicit FixedClock(int64_t reading) noexcept : reading_(reading) {}
  int64_t now() const noexcept override { return reading_; }
  Reading coarse() const noexcept override { return {reading_, reading_}; }

 private:
  int64_t reading_;
};

}  // namespace snowflake
