// When a layout's time runs out, and when to say so (issue 39, item 8).
//
// A layout's time field holds 2^timestamp_bits units after its epoch; a
// generator issues IDs up to the last unit whose IDs are positive bigints
// (Layout::max_issued_timestamp). Baidu's uid-generator ran out so on
// 2024-11-20 (28 bits of seconds from 2016) and production stopped without a
// word beforehand. A short layout here (a custom width, 10 ms or 1 s units, a
// late epoch) can do the same, so the node says so: snowflake_status shows
// the end, and the server log warns at start and then once a day from a year
// before it.
//
// The end is the start of the last unit a generator issues (its
// last_issued_unix_ms: snowflake_timestamp of the largest ID); IDs are issued
// until that unit is over, after which snowflake_nextval() refuses (2200H).
//
// Pure C++17, no PostgreSQL header; noexcept, no overflow for any clock
// reading (ms since 1970, any int64).
#pragma once

#include <cstdint>

#include "layout.hpp"

namespace snowflake {

inline constexpr int64_t kMsPerDay = 86400000;
// How long before the end the server log warns: a year.
inline constexpr int64_t kLayoutEndWarningMs = 365 * kMsPerDay;
// How often it warns in that year (and after the end): once a day.
inline constexpr int64_t kLayoutEndWarningIntervalMs = kMsPerDay;

enum class LayoutEndState : uint8_t {
  kFar,    // more than kLayoutEndWarningMs before the end
  kNear,   // within kLayoutEndWarningMs of the end, still issuing
  kEnded,  // the last unit is over: the generator refuses
};

struct LayoutEnd {
  int64_t ends_at_unix_ms;  // the start of the last unit issued, ms since 1970
  int64_t remaining_ms;     // from the clock to ends_at_unix_ms, 0 once there
  LayoutEndState state;
};

// a - b, saturated to the int64 range.
constexpr int64_t saturated_difference(int64_t a, int64_t b) noexcept {
  if (b < 0 && a > INT64_MAX + b) return INT64_MAX;
  if (b > 0 && a < INT64_MIN + b) return INT64_MIN;
  return a - b;
}

// Where `layout` ends, seen from a clock reading `now_unix_ms`.
constexpr LayoutEnd layout_end(const Layout& layout, int64_t now_unix_ms) noexcept {
  const int64_t ends_at = layout.last_issued_unix_ms();
  const int64_t remaining = saturated_difference(ends_at, now_unix_ms);
  LayoutEndState state = LayoutEndState::kFar;
  // The clock is past the last unit when the unit that holds it comes after
  // it: what the generator refuses (kTimestampExhausted).
  if (now_unix_ms >= ends_at && now_unix_ms - ends_at >= layout.unit_ms())
    state = LayoutEndState::kEnded;
  else if (remaining <= kLayoutEndWarningMs)
    state = LayoutEndState::kNear;
  return LayoutEnd{ends_at, remaining > 0 ? remaining : 0, state};
}

// Whether the server log is due a warning about the end at `now_unix_ms`,
// the last one having been given at `last_warned_unix_ms`: within a year of
// the end (or after it), and a day or more from the last warning, either way
// (a clock stepped back a day is a new day too).
constexpr bool layout_end_warning_due(const Layout& layout, int64_t now_unix_ms,
                                      int64_t last_warned_unix_ms) noexcept {
  if (layout_end(layout, now_unix_ms).state == LayoutEndState::kFar) return false;
  const int64_t since = saturated_difference(now_unix_ms, last_warned_unix_ms);
  return since >= kLayoutEndWarningIntervalMs || since <= -kLayoutEndWarningIntervalMs;
}

}  // namespace snowflake
