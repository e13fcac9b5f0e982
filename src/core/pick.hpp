// Automatic leasing's pick, without PostgreSQL: given the registry's rows of a
// range of identities, which identity a node without a configured worker_id
// tries to claim next. The registry worker (src/pg/registry/claim.cpp) reads
// the rows with one SELECT and calls it; the deterministic simulator
// (test/simulation/) calls it on its registry's rows at the registry's time.
//
// The rule, in this order:
//   1. a row this node holds or may take over from its own lineage comes
//      first, a live one before an expired one, so a restart within the lease
//      gets the same identity back: the row of the same holder (this running
//      postmaster: the same system identifier, timeline, host, data directory
//      and token), or of a holder this node succeeds (its system identifier on
//      an earlier timeline, or on the same timeline, host and data directory
//      with another token: this node restarted, promoted, restored or cloned)
//      once that holder released it at a clean shutdown or stopped renewing it
//      (stale: src/core/registry_row.hpp) or its lease expired. A live row of
//      a predecessor that still renews is not this node's: a clone or a
//      restored copy of a running node picks another identity;
//   2. else the lowest identity, in (datacenter_id, worker_id) order, that no
//      live row holds: a row whose lease has expired counts as free (its claim
//      is a takeover, above the floor the registry hands over);
//   3. else none: every identity of the range is leased by a live node.
// A pick is only a proposal: the claim that follows may find that another node
// claimed the identity first, and the worker picks again (kPickAttempts).
#pragma once

#include <cstddef>
#include <cstdint>

#include "layout.hpp"

namespace snowflake::automatic {

// Claims in a row lost to other nodes before the worker gives up for now (and
// tries again after lease::retry_at_us).
inline constexpr int kPickAttempts = 4;

// The identities a node may lease: worker_id 0 to last_worker_id in each
// datacenter_id from first_datacenter_id to last_datacenter_id.
struct Range {
  int first_datacenter_id = 0;
  int last_datacenter_id = 0;
  int last_worker_id = 0;
};

// The range for `layout` and the configured datacenter_id (-1: unset): that
// datacenter only, or every datacenter of the layout when it is unset.
Range range_of(const Layout& layout, int datacenter_id) noexcept;

// A holder as the registry records it. The text is NUL-terminated and
// belongs to the caller (the glue passes libpq's values, the simulator its
// strings), so neither needs the other's string type.
struct HolderText {
  const char* system_identifier = "";  // decimal, as the numeric column's text
  int64_t timeline = 0;
  const char* host = "";
  const char* data_directory = "";
  int64_t token = 0;  // 0: none (a row of 1.6 or earlier, or reserved)
};

// One row of the registry.
struct Row {
  int datacenter_id = 0;
  int worker_id = 0;
  HolderText holder;
  bool live = false;      // expires_at >= now() at the registry
  bool released = false;  // released at its holder's clean shutdown
  bool stale = false;     // not renewed for two thirds of its lease (registry_row::stale)
};

// The identity to try, or none (found false).
struct Pick {
  bool found = false;
  int datacenter_id = 0;
  int worker_id = 0;
};

// Whether `row` is `self`'s (rule 1).
bool is_mine(const HolderText& self, const Row& row) noexcept;

// The identity `self` tries next, from `rows` (in any order; sorted here in
// place by (datacenter_id, worker_id); rows outside `range` are ignored).
Pick pick(const Range& range, const HolderText& self, Row* rows, size_t count) noexcept;

}  // namespace snowflake::automatic
