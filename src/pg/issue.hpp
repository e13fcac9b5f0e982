// Issuing IDs: the generator driven by the real clock, the clock policy and
// the durable bound, with every refusal reported as a PostgreSQL error.
#pragma once

#include <cstdint>

namespace snowflake::pg {

struct IssuedRun {
  int64_t first_id;
  int64_t count;  // consecutive IDs, all in one millisecond
};

// Reserves up to `wanted` (>= 1) IDs for this node; ereport(ERROR) when it
// cannot (not preloaded, in recovery, node unset, clock too far behind).
IssuedRun issue(int64_t wanted);

// ereport(ERROR) unless this server could issue IDs: the library is
// preloaded and the server is not in recovery.
void require_issuing_server();

}  // namespace snowflake::pg
