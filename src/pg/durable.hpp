// The durable bound: the node's IDs stay unique across restarts, crashes and
// failover (durable.cpp states the protocol).
#pragma once

#include <cstdint>

namespace snowflake::pg {

// _PG_init (preload only): the custom WAL resource manager of the bound.
void register_wal_resource_manager();

// Makes a durable bound after `timestamp`'s unit of time (and an interval beyond,
// kDurableIntervalMs in src/core/generator.hpp),
// written to WAL and the state file before it is used. With
// `wait` false it gives up at once if another backend is already at it.
void make_durable(int64_t timestamp, bool wait);

}  // namespace snowflake::pg
