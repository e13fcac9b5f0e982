// The registry's history as a node sees it, without PostgreSQL: what counts
// as a change of it, the floor the claims after a change start at, and whom
// the floor binds. The registry worker's round (registry_round.hpp), which
// the worker (src/pg/registry/) and the deterministic simulator
// (test/simulation/) run, calls these.
//
// Why. The protocol rests on the registry keeping every claim and renewal it
// acknowledged (doc/registry.md, "What it must keep"). A registry that loses
// some (a failover to an asynchronous standby, a restore, its database or
// table dropped and made again, a dump restored over it) hands rows back in
// an older state or not at all: a claim then takes an identity whose holder
// still issues under a lease the registry forgot, and starts below its IDs.
//
// What counts as a change (any one):
//   - the registry's identity differs from the one this node remembers: its
//     system identifier, its timeline, or its table's OID (a table dropped
//     and made again, restored from a dump, or moved to another server gets
//     another one; with the system identifier it tells a table moved).
//     Parts either side does not know (a role that may not read
//     pg_control_system()) are not compared. The node remembers the identity
//     durably (pg_snowflake/registry), so a restart, or a copy of the node,
//     compares at its first answer;
//   - the row of the identity this node claims is gone (its claim inserted
//     it) or older (an earlier renewed_at) than this node last saw it: the
//     registry forgot a commit even if nothing above changed (a snapshot
//     started as it was). (A registry whose clock stepped back looks so too.)
//
// The floor. Every renewal the registry forgot was acknowledged before this
// node saw the change, at the registry's time `now`; its holder issues under
// it for at most a lease, its IDs below
//     floor = now + (the longest lease) + max_lead + 1 ms
// on clocks in step with the registry's (the longest lease this node has seen
// in the registry, at least its own, at most an hour; this node's
// snowflake.max_lead standing for the holder's). So from then on:
//   - every identity this node claims other than by renewing the lease it
//     holds (a takeover, a new claim, its own identity claimed back) starts at
//     or above the floor (claim_floor_ms);
//   - a holder that sees the change keeps issuing below the cap it had then
//     (its IDs there lie below the floor of anyone who took its identity over
//     in the history the registry forgot), and its IDs at or above that cap
//     lie at or above the floor: a gap (lease.hpp, gap_after_change), so a
//     holder renewing a row whose takeover the registry forgot does not issue
//     what the forgotten taker issues. The stall is from its old cap to the
//     floor, about the time between its last renewal before the change and
//     the change.
// The floor only rises, and once its time has passed it changes nothing.
//
// Not covered: a node that never reached the registry before the change (it
// remembers nothing to compare; doc/registry.md shows the sequence, and
// doc/simulation.md the seed), a holder whose clock runs ahead of the
// registry's by more than the floor's margin, and a registry restored to an
// earlier point on the same timeline seen only by nodes that never saw the
// row it lost.
#pragma once

#include <cstdint>

namespace snowflake::registry_history {

// The longest lease (snowflake.registry_lease's maximum, ms).
inline constexpr int64_t kLongestLeaseMs = 60 * 60 * 1000;

// The registry's identity; 0 is unknown in each part.
struct Identity {
  uint64_t system_identifier = 0;  // pg_control_system()
  int64_t timeline = 0;            // its current timeline
  int64_t table = 0;               // the OID of its registry table
  bool operator==(const Identity& other) const {
    return system_identifier == other.system_identifier && timeline == other.timeline &&
           table == other.table;
  }
};

// What changed (a set of these bits; 0: nothing).
enum Change : unsigned {
  kSystemChanged = 1u,    // another system identifier
  kTimelineChanged = 2u,  // another timeline
  kTableChanged = 4u,     // another table OID
  kRowGone = 8u,          // the claimed identity's row, seen before, is gone
  kRowOlder = 16u,        // ... older than this node last saw it
};

// The parts known on both sides that differ.
unsigned compare(const Identity& remembered, const Identity& seen) noexcept;

// What to remember after seeing `seen`: its known parts, else the remembered ones.
Identity merge(const Identity& remembered, const Identity& seen) noexcept;

// A claim's answer about the row before it (the registry's times, µs since 1970).
struct RowBefore {
  bool existed = false;
  int64_t renewed_at_us = 0;
};

// Whether the row of the identity claimed went back: `seen_renewed_at_us`
// is the renewed_at this node last saw in it (0: it saw none).
unsigned row_change(int64_t seen_renewed_at_us, const RowBefore& before) noexcept;

// What a node remembers of its registry (pg_snowflake/registry).
struct Memory {
  Identity identity;
  int64_t longest_lease_ms = 0;  // the longest lease of its rows, as last seen
  int64_t changed_at_ms = 0;     // the registry's time of the last change seen (0: never)
  int64_t floor_ms = 0;          // the floor since (ms since 1970; 0: none)
  bool operator==(const Memory& other) const {
    return identity == other.identity && longest_lease_ms == other.longest_lease_ms &&
           changed_at_ms == other.changed_at_ms && floor_ms == other.floor_ms;
  }
};

// The floor of a change seen at the registry's `now_ms`.
int64_t floor_after_change(int64_t now_ms, int64_t longest_lease_ms, int64_t lease_ms,
                           int64_t max_lead_ms) noexcept;

// Records a change seen at the registry's `now_ms` (the floor only rises).
void seen_change(Memory* memory, int64_t now_ms, int64_t lease_ms, int64_t max_lead_ms) noexcept;

// Records the longest lease of the registry's rows now (at most an hour),
// for the next change: an empty table (0) keeps the one seen before it.
void seen_lease(Memory* memory, int64_t longest_lease_ms) noexcept;

// The largest ids_before (ms since 1970) a claim starts above: the one the
// registry handed over (`inherited_ms`, < 0: none), or, for a claim that is
// not a renewal (the lease held on the same identity, not taken over from
// another holder: a takeover counts as a claim even by a node whose lease
// lapsed on that identity), the floor, whichever is later.
inline int64_t claim_floor_ms(const Memory& memory, int64_t inherited_ms, bool renewal) noexcept {
  return !renewal && memory.floor_ms > 0 && memory.floor_ms > inherited_ms ? memory.floor_ms
                                                                           : inherited_ms;
}

}  // namespace snowflake::registry_history
