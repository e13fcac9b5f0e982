// The statements of the registry worker: claim or renew an identity, pick a
// free one, lower ids_before at shutdown; and what a claim hands over to the
// new holder. claim.cpp states the rules they carry.
#pragma once

#include <cstdint>

#include "../postgres.hpp"
#include "view.hpp"

namespace snowflake::pg::registry {

// This node, as the registry records it.
struct Self {
  char system_identifier[kSystemIdentifierSize];
  int64 timeline;
  char host[kHostSize];
  char data_directory[MAXPGPATH];
  char cluster_name[NAMEDATALEN];
  int64 token;  // this postmaster's (view.cpp)
};

void describe_self(Self* self);

enum class Claim { kClaimed, kTaken, kRace, kFailed };

struct ClaimResult {
  Holder row;
  int64_t inherited_ms;        // -1 if none
  int64_t sent_us;             // lease_clock_us() when the statement was sent
  int64_t ids_before_ms;       // the row's ids_before once claimed (ms since 1970)
  char taken_from[kHostSize];  // a takeover: the previous holder's host, else ""
  // What the node compares with what it saw before (history.cpp).
  int64_t table;                   // the registry table's OID
  bool existed;                    // the row existed before the statement
  int64_t previous_renewed_at_us;  // its renewed_at then (µs since 1970, 0: none)
  int64_t now_us;                  // the registry's now() (µs since 1970)
};

// Claims or renews (datacenter_id, worker_id) for `self`: kClaimed (with the
// row in `out`), kTaken (by the node in out->row), kRace (another node's insert
// came first: try again), or kFailed (reason in `error`; disconnect). cap_ms:
// the ids_before of the lease renewed (ms since 1970, 0: a new claim), below
// which the reported ids_before never goes.
Claim claim(const Self& self, int datacenter_id, int worker_id, int64_t cap_ms, ClaimResult* out,
            char* error);

// Automatic leasing: the identity to try next, as automatic::pick
// (src/core/pick.hpp) decides on the registry's rows of the range. A row this
// node already holds (or held, if no one took it since) comes first, so a
// restart within the lease gets the same identity back; else the lowest free
// one. false with *found = false when every identity is leased, with
// *found = true when the statement failed (reason in `error`).
bool pick(const Self& self, int* datacenter_id, int* worker_id, bool* found, char* error);

// After a claim: the generator's floor goes up to what the previous holders
// reported, and `view` keeps it (and whom it came from) for the errors.
// `same_lease`: the View held the lease on the identity claimed
// (lease::floor_after_claim keeps its floor if the claim took nothing over).
void apply_inherited(const ClaimResult& result, bool same_lease, View* view);

// At shutdown: sets this node's row's ids_before to `ids_before` (ms since
// 1970) and marks it released, if the row is still this postmaster's as
// renewed at `renewed_at` (the last renewal the worker saw accepted). false with the reason in
// `error` if the statement failed; else *released says whether it applied.
bool release_row(const Self& self, int datacenter_id, int worker_id, TimestampTz renewed_at,
                 int64_t ids_before, bool* released, char* error);

}  // namespace snowflake::pg::registry
