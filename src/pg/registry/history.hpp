// The registry's history as this node sees it: what it remembers of the
// registry (pg_snowflake/registry), the probe at every connection and the
// WARNING of a change (history.cpp states them; src/core/registry_history.hpp
// decides what counts as a change, src/core/registry_round.hpp when it is
// looked for and what follows). Only the worker (worker.cpp) uses it.
#pragma once

#include "../../core/registry_round.hpp"
#include "../postgres.hpp"
#include "view.hpp"

namespace snowflake::pg::registry {

// Reads pg_snowflake/registry into view->registry.history, once per
// shared-memory initialization (the View outlives a restart of the worker).
void load_history(View* view);

// Writes `memory` to pg_snowflake/registry if it is not what the file holds
// (a failure is a WARNING, and the next call tries again).
void remember_history(const registry_history::Memory& memory);

// After the durability probe of a connection (durability.cpp, which puts the
// registry's system identifier and timeline in `facts`): asks the registry
// its table's OID, its clock and its rows' longest lease, into the answer's
// probe (registry_round::Answer). false with the reason in `error` if the
// statement failed.
bool probe_history(const RegistryFacts& facts, registry_round::Answer* answer, char* error);

// The WARNING of a change the round saw.
void warn_history_changed(const registry_round::HistoryChange& change);

// The round's kClaimAboveFloor: a LOG line, the claim of the identity `round`
// now holds starting at `floor_ms` (ms since 1970), above its clock.
void log_claim_above_floor(const registry_round::Round& round, int64_t floor_ms);

}  // namespace snowflake::pg::registry
