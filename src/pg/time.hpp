// Conversions between the milliseconds of the IDs and PostgreSQL timestamps.
#pragma once

#include <cstdint>

#include "postgres.hpp"

namespace snowflake::pg {

// 2000-01-01 00:00:00 UTC, PostgreSQL's epoch, in ms since the Unix epoch.
inline constexpr int64_t kPostgresEpochUnixMs =
    int64_t{POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE} * SECS_PER_DAY * 1000;

// The last millisecond a timestamptz holds (294276-12-31 23:59:59.999 UTC).
inline constexpr int64_t kLastTimestamptzUnixMs = (END_TIMESTAMP - 1) / 1000 + kPostgresEpochUnixMs;

// The first millisecond a timestamptz holds (4714-11-24 00:00:00 UTC BC).
inline constexpr int64_t kFirstTimestamptzUnixMs = MIN_TIMESTAMP / 1000 + kPostgresEpochUnixMs;

inline bool timestamptz_holds_unix_ms(int64_t unix_ms) {
  return unix_ms >= kFirstTimestamptzUnixMs && unix_ms <= kLastTimestamptzUnixMs;
}

// Any int64 of ms: a time timestamptz cannot hold is its infinity on that
// side (the product below would overflow for it), never a wrong time. A
// layout's epoch may lie past the end of timestamptz (it is checked only
// against int64), so its times may too; messages show them with
// unix_ms_text.
inline TimestampTz timestamptz_from_unix_ms(int64_t unix_ms) {
  if (unlikely(unix_ms > kLastTimestamptzUnixMs)) return DT_NOEND;
  if (unlikely(unix_ms < kFirstTimestamptzUnixMs)) return DT_NOBEGIN;
  return (unix_ms - kPostgresEpochUnixMs) * 1000;
}

// The millisecond that holds `ts` (rounded down, also before 2000).
inline int64_t unix_ms_from_timestamptz(TimestampTz ts) {
  const int64_t ms = ts / 1000 - (ts % 1000 < 0 ? 1 : 0);
  return ms + kPostgresEpochUnixMs;
}

// `ts` as text in the session's time zone, in its own palloc'd copy (unlike
// timestamptz_to_str's static buffer, so a message can show two times).
inline const char* timestamp_text(TimestampTz ts) {
  return pstrdup(timestamptz_to_str(ts));
}

// `unix_ms` as text for a message: the time, or past timestamptz's range the
// number of ms and which end it lies beyond.
inline const char* unix_ms_text(int64_t unix_ms) {
  if (timestamptz_holds_unix_ms(unix_ms)) return timestamp_text(timestamptz_from_unix_ms(unix_ms));
  return psprintf("%lld ms after 1970-01-01 00:00:00 UTC (%s the range of timestamptz)",
                  static_cast<long long>(unix_ms),
                  unix_ms > kLastTimestamptzUnixMs ? "after" : "before");
}

}  // namespace snowflake::pg
