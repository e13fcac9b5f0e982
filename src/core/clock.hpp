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

// A source of clock readings, in ms since the layout's epoch.
class Clock {
 public:
  virtual int64_t now() const noexcept = 0;

 protected:
  ~Clock() = default;
};

// The wall clock, in ms since `epoch_ms` (ms since the Unix epoch).
class SystemClock final : public Clock {
 public:
  explicit SystemClock(int64_t epoch_ms) noexcept : epoch_ms_(epoch_ms) {}
  int64_t now() const noexcept override { return unix_time_ms() - epoch_ms_; }

 private:
  int64_t epoch_ms_;
};

// A clock that always reads the same: for tests and benchmarks that drive
// time themselves.
class FixedClock final : public Clock {
 public:
  explicit FixedClock(int64_t reading) noexcept : reading_(reading) {}
  int64_t now() const noexcept override { return reading_; }

 private:
  int64_t reading_;
};

}  // namespace snowflake
