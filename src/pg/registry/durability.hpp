// What the registry can lose of the claims and renewals it acknowledged, as
// the registry worker finds out by asking it (durability.cpp states what it
// asks and what it cannot see). Only the worker (worker.cpp) uses it.
#pragma once

#include "../postgres.hpp"
#include "view.hpp"

namespace snowflake::pg::registry {

// The durability's name in snowflake_registry_status, or nullptr when unknown.
const char* durability_name(Durability durability);

// Asks the registry over the open connection what it can lose, and updates
// `facts` (the View's): a WARNING, once per change, when it streams only to
// asynchronous standbys; its system identifier and timeline, where the role
// may read them, go to `facts` for history.cpp to compare. false with the
// reason in `error` if a statement failed (the caller disconnects).
bool probe_durability(RegistryFacts* facts, char* error);

}  // namespace snowflake::pg::registry
