// The decisions of the registry protocol, without PostgreSQL: what a node may
// do under its lease, what it reports to the registry, and what a claim hands
// over. The registry worker's round (registry_round.hpp) and the backends
// (src/pg/registry/) call these; so does the deterministic simulator
// (test/simulation/), which drives them through crashes, clock steps and lost
// replies.
//
// The rules (registry_round.hpp and src/pg/registry/claim.cpp state why they
// keep two nodes apart):
//   - a node issues only while its monotonic clock reads less than
//     valid_until = (that clock when the last accepted claim or renewal was
//     sent) + lease - lease / 10;
//   - every ID it returns lies below the ids_before of its last accepted claim
//     or renewal (the cap), and at or above the floor a takeover inherited;
//   - after it saw the registry's history change while it held the lease
//     (registry_history.hpp), its IDs at or above the cap it had then lie at
//     or above the history's floor (the gap);
//   - each claim or renewal reports an ids_before above every ID the node has
//     issued or may issue under the lease it asks for, and never below what it
//     reported before (the cap): a clock stepped back lowers nothing;
//   - a release at shutdown applies only to the renewal it follows.
#pragma once

#include <cstdint>

#include "layout.hpp"

namespace snowflake::lease {

// What a backend reads of its node's lease (the View's hot part in
// PostgreSQL). Timestamps of the layout; times in microseconds of the
// monotonic clock.
struct Grant {
  bool held = false;  // a lease is held for the identity settings in force
  int64_t node = -1;  // the node field leased (held)
  int64_t valid_until_us = 0;
  int64_t ids_before = 0;  // the cap: every ID returned lies below it
  int64_t floor = 0;       // inherited at the last takeover (0: none)
  // After a change of the registry's history seen while held: IDs of units in
  // [gap_from, gap_until) may be a forgotten holder's (0, 0: none).
  int64_t gap_from = 0;
  int64_t gap_until = 0;
};

enum class Verdict : uint8_t {
  kAllowed,     // issue (before reserving), or return the reserved IDs
  kNotHeld,     // no lease for the settings in force
  kExpired,     // the lease ran out by the monotonic clock
  kOtherNode,   // the lease is for another node field than the one wanted
  kAtCap,       // the IDs' unit is at or past the cap
  kBelowFloor,  // reserved before a takeover raised the floor: another
                // holder may have issued these IDs
  kInGap,       // in the gap after a change of the registry's history: a
                // holder the registry forgot may have issued these IDs
};

// Before reserving: whether the node may issue with `wanted` (-1: any node
// field leased) at `now_us`.
Verdict may_issue(const Grant& grant, int64_t now_us, int64_t wanted) noexcept;

// After reserving IDs of the unit `timestamp` for `node`: whether they may be
// returned. The lease is checked again (the backend may have been paused past
// it), and the IDs must lie in [floor, cap).
Verdict may_return(const Grant& grant, int64_t now_us, int64_t node, int64_t timestamp) noexcept;

// Every ID issued under a lease of lease_ms lies below this much after the
// later of the clock and the last ID (ms).
inline int64_t window_ms(int64_t lease_ms, int64_t max_lead_ms) noexcept {
  return lease_ms + max_lead_ms + 1;
}

// The ids_before (ms since 1970) a claim or renewal reports: the later of the
// clock and the last ID's unit, plus the window; never below `cap_ms`, the
// ids_before of the last accepted claim or renewal of this lease (0: none).
int64_t ids_before_to_report(int64_t clock_ms, int64_t last_id_ms, int64_t lease_ms,
                             int64_t max_lead_ms, int64_t cap_ms) noexcept;

// The monotonic time up to which a claim or renewal sent at `sent_us` lets the
// node issue.
inline int64_t valid_until_us(int64_t sent_us, int64_t lease_us) noexcept {
  return sent_us + lease_us - lease_us / 10;
}
// When the next renewal goes out after one sent at `sent_us`.
inline int64_t renew_at_us(int64_t sent_us, int64_t lease_us) noexcept {
  return sent_us + lease_us / 3;
}
// When a failed attempt at `now_us` is tried again.
inline int64_t retry_at_us(int64_t now_us, int64_t lease_us) noexcept {
  constexpr int64_t kRetryUs = 1000 * 1000;
  return now_us + (kRetryUs < lease_us / 3 ? kRetryUs : lease_us / 3);
}

// The cap a claim's answer sets: the row's ids_before (ms since 1970) as a
// timestamp of the layout (the first unit that starts at or after it).
inline int64_t cap_from_ids_before(const Layout& layout, int64_t ids_before_ms) noexcept {
  return layout.timestamp_from_unix_ms(ids_before_ms);
}
// The cap back in ms since 1970, for ids_before_to_report's floor.
inline int64_t cap_ms(const Layout& layout, int64_t cap) noexcept {
  return cap > 0 ? layout.unix_ms(cap) : 0;
}

// The floor a claim's answer sets: the first unit at or after the largest
// ids_before of the holders before (inherited_ms, ms since 1970; < 0 none), or
// 0 when it is at or before the layout's epoch.
inline int64_t floor_from_inherited(const Layout& layout, int64_t inherited_ms) noexcept {
  if (inherited_ms <= layout.epoch_ms()) return 0;
  return layout.timestamp_from_unix_ms(inherited_ms);
}

// The View's floor after an accepted claim or renewal: the one it had is kept
// only by a renewal (the lease held on the same identity, not taken over
// from another holder), then raised to `inherited` (floor_from_inherited;
// 0: none), which the generator's floor is raised to as well.
inline int64_t floor_after_claim(int64_t floor, bool renewal, int64_t inherited) noexcept {
  const int64_t kept = renewal ? floor : 0;
  return kept > inherited ? kept : inherited;
}

// The registry's history changed (registry_history.hpp) while `grant` is
// held: its IDs at or above its cap must lie at or above `floor` (a timestamp
// of the layout). A gap the generator has not passed yet (its last ID's unit
// `last_timestamp` below the gap's last unit) is widened to cover both.
void gap_after_change(Grant* grant, int64_t floor, int64_t last_timestamp) noexcept;

// After an accepted claim or renewal: a claim that is not a renewal raised the
// generator to the history's floor itself (registry_history::claim_floor_ms),
// so no gap stays; a renewal keeps it.
inline void gap_after_claim(Grant* grant, bool renewal) noexcept {
  if (renewal) return;
  grant->gap_from = 0;
  grant->gap_until = 0;
}

// Before reserving: whether the generator (its last ID of the unit
// `last_timestamp`) must first be raised to the gap's end (gap_until),
// because its next IDs may fall in the gap: its next unit is there, or the
// clock plus max_lead (`reach`, a timestamp of the layout) reaches it.
inline bool must_cross_gap(const Grant& grant, int64_t last_timestamp, int64_t reach) noexcept {
  return grant.gap_until > 0 && last_timestamp + 1 < grant.gap_until &&
         (last_timestamp + 1 >= grant.gap_from || reach >= grant.gap_from);
}

// At a clean shutdown: the ids_before (ms since 1970) the release reports, the
// unit after the last ID's.
inline int64_t release_ids_before_ms(const Layout& layout, int64_t last_id) noexcept {
  return layout.unix_ms(layout.timestamp_of(last_id) + 1);
}

}  // namespace snowflake::lease
