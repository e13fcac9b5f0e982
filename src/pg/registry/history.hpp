// The registry's history as this node sees it: what it remembers of the
// registry (pg_snowflake/registry), and the checks at every probe and claim
// answer (history.cpp states them; src/core/registry_history.hpp decides).
// Only the worker (worker.cpp) uses it.
#pragma once

#include "../postgres.hpp"
#include "claim.hpp"
#include "view.hpp"

namespace snowflake::pg::registry {

// Reads pg_snowflake/registry into view->registry.history, once per
// shared-memory initialization (the View outlives a restart of the worker).
void load_history(View* view);

// After the durability probe of a connection (durability.cpp, which puts the
// registry's system identifier and timeline in view->registry): asks the
// registry its table's OID, its clock and its rows' longest lease, and
// compares its identity with what this node remembers. A change is a
// WARNING, the floor of later claims, and the gap of a lease held. false with
// the reason in `error` if the statement failed (the caller disconnects).
bool probe_history(View* view, char* error);

// After a claim's answer for (datacenter_id, worker_id): the table's OID, and
// the row before the statement against what this worker last saw of it.
void check_claim(View* view, int datacenter_id, int worker_id, const ClaimResult& result);

// Another registry, or none: what this worker saw of the last one's rows no
// longer applies (the identity it remembers does: another registry is a
// change of history).
void forget_rows_seen();

}  // namespace snowflake::pg::registry
