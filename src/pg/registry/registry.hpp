// The worker-identity registry (issue 4): leases on (datacenter_id, worker_id)
// kept in a PostgreSQL database that every node reaches, so that two live
// nodes never issue IDs with the same identity. This header is what the rest
// of the module sees of src/pg/registry/; src/README.md maps its files (the
// protocol is stated in src/core/registry_round.hpp, the worker's round, and
// in claim.cpp), doc/registry.md is the operator's guide.
#pragma once

#include <cstdint>

#include "../postgres.hpp"
#include "../settings.hpp"

namespace snowflake::pg {

// _PG_init (preload only): the shared-memory hooks and the background worker.
void request_registry_memory();
void register_registry_worker();
// Whether it was registered: false when max_worker_processes was used up, or
// in binary-upgrade mode (it also runs the bound check, bound_check.cpp).
bool registry_worker_registered();

// The node field the registry lets this node issue IDs with: the configured
// one once the registry confirms it, or the one leased for it. Waits briefly
// for the worker's first claim; ereport(ERROR) when the node may not issue.
int64_t registered_node();

// After IDs of the unit `timestamp` (a timestamp of the layout) were reserved
// for `node`: the lease checked before the reservation may have run out while
// the backend was paused, and the IDs must lie below the ids_before this node
// reported with its last accepted claim (the floor of any node that takes the
// identity over). Otherwise ereport(ERROR); the reserved IDs are then never
// returned.
void confirm_registered_node(int64_t node, int64_t timestamp);

// The generator (at `last_timestamp`, a timestamp of the layout) is further
// ahead of the clock (`clock`, ms since the epoch) than the policy allows. If that
// is because this node took its identity over from a node whose IDs may run up
// to a later time (the registry's floor), ereport(ERROR) saying so; otherwise
// return (the caller reports a clock that moved backwards).
void explain_clock_behind(int64_t last_timestamp, int64_t clock);

// The node field for issue(), and the check after its reservation. Without a
// registry: one predictable branch on a process-local flag each.
inline int64_t issuing_node() {
  if (likely(!settings.registry_configured)) return configured_node();
  return registered_node();
}
inline void confirm_issuing_node(int64_t node, int64_t timestamp) {
  if (unlikely(settings.registry_configured)) confirm_registered_node(node, timestamp);
}

}  // namespace snowflake::pg
