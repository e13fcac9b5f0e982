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

// Precondition: unix_ms <= kLastTimestamptzUnixMs (larger values overflow).
inline TimestampTz timestamptz_from_unix_ms(int64_t unix_ms) {
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

}  // namespace snowflake::pg
