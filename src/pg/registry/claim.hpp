// The statements of the registry worker: claim or renew an identity, pick a
// free one, lower ids_before at shutdown; and the generator raised to the
// floor a claim hands over. claim.cpp states the rules they carry; the round
// that runs them is src/core/registry_round.hpp.
#pragma once

#include <cstdint>

#include "../../core/registry_round.hpp"
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

// What a claim's answer says beyond what the round decides on
// (registry_round::Answer): the row, for the status and the errors.
struct ClaimRow {
  Holder row;
  char taken_from[kHostSize];  // a takeover: the previous holder's host, else ""
};

// Claims or renews request.datacenter_id, request.worker_id for `self`
// (src/core/registry_round.hpp, Request::kClaim): answer->outcome is kClaimed
// (with the row in `row`), kTaken (by the node in row->row), kRace (another
// node's insert came first), or kFailed (reason in `error`). The ids_before it
// reports is lease::ids_before_to_report with the request's cap, at sending.
void claim(const Self& self, const registry_round::Request& request, registry_round::Answer* answer,
           ClaimRow* row, char* error);

// Automatic leasing: the identity to try next, as automatic::pick
// (src/core/pick.hpp) decides on the registry's rows of the range. A row this
// node already holds (or held, if no one took it since) comes first, so a
// restart within the lease gets the same identity back; else the lowest free
// one. answer->outcome: kPicked (the identity in answer), kNoneFree (every
// identity is leased), or kFailed (the statement failed: reason in `error`).
void pick(const Self& self, registry_round::Answer* answer, char* error);

// The round's kRaiseFloor (registry_round::Output): the generator's floor goes
// up to `floor` (a timestamp of the layout; nothing is made durable: the first
// ID there raises a durable bound first), before the lease is published; with
// `log`, a LOG line says its IDs wait for its clock (floor_ms, whom it comes
// from: `view`'s floor_host).
void raise_floor(int64_t floor, int64_t floor_ms, bool log, const View& view);

// A request of the round (kClaim or kPick), on the connection to the registry
// (made if there is none), after the probes of its durability (into `facts`)
// and history if it asks for them; the answer (kFailed: the reason in
// `error`), and a claim's row in `row`.
registry_round::Answer ask_registry(const registry_round::Request& request, ClaimRow* row,
                                    RegistryFacts* facts, char* error);

// The round's kRecordHeld (held) or kRecordConflict: the claim's row into the
// View's mine or other, and whom the floor comes from.
void record_row(const ClaimRow& row, registry_round::FloorFrom floor_from, bool held, View* view);

// The round's release at shutdown, once the View says released: the
// ids_before of the last ID then (lease::release_ids_before_ms), sent with a
// second at most a step, and a LOG line of the outcome.
void release_lease(const registry_round::Request& request, char* error);

// At shutdown: sets this node's row's ids_before to `ids_before` (ms since
// 1970) and marks it released, if the row is still this postmaster's as
// renewed at `renewed_at_us` (the registry's renewed_at of the last renewal
// the worker saw accepted, µs since 1970). false with the reason in `error`
// if the statement failed; else *released says whether it applied.
bool release_row(const Self& self, int datacenter_id, int worker_id, int64_t renewed_at_us,
                 int64_t ids_before, bool* released, char* error);

}  // namespace snowflake::pg::registry
