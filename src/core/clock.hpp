// Clock readings for the generator, in milliseconds.
//
// The generator itself never reads a clock: callers pass the reading in. These
// are the readings the extension and the benchmarks pass: the wall clock (what
// IDs carry, and what an operator or NTP may step) and the monotonic clock
// (what measures how long a wait has lasted, whatever the wall clock does).
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

}  // namespace snowflake
