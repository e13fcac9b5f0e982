// The WAL record of the durable bound and its redo (bound_wal.cpp; durable.cpp
// states the protocol).
#pragma once

#include <cstdint>

#include "../postgres.hpp"

namespace snowflake::pg {

// _PG_init (preload only): the custom WAL resource manager of the bound.
void register_wal_resource_manager();

// Writes the bound `until` (ms since the epoch) as a WAL record and flushes
// it; returns its position.
XLogRecPtr log_bound(int64_t until);

}  // namespace snowflake::pg
