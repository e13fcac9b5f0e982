// The simulator's random numbers, shared with the differential test: seeded,
// the same on every machine.
#pragma once

#include <cstdint>

namespace snowflake::sim {

// splitmix64: the same numbers from the same seed on every machine.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // In [low, high].
  int64_t range(int64_t low, int64_t high) {
    return low + static_cast<int64_t>(next() % static_cast<uint64_t>(high - low + 1));
  }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
  // Exponential with this mean, at least 1.
  int64_t exponential(int64_t mean);

 private:
  uint64_t state_;
};

}  // namespace snowflake::sim
