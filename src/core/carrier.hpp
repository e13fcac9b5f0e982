// The dump's carrier of the bound, without PostgreSQL: what a backend does
// when its IDs reach the carrier it last saw, and what a restored row may give
// the node. The glue (src/pg/bound/carrier.cpp, which states the protocol)
// reads and writes the table snowflake_dump_bound and calls these; so does the
// deterministic simulator (test/simulation/), which dumps a node's database
// and restores it into a new node of the same identity.
//
// The rules:
//   - each database with the extension holds a carrier: an ID above every ID
//     this node issued in it (as a number: IDs compare so whatever the layout
//     or epoch of whoever reads it), and the system identifier of the cluster
//     whose bound covers it; it only rises;
//   - a backend returns IDs only below the carrier: before returning IDs at
//     or past the value it last saw, it reads the carrier and raises it to
//     the node's written durable bound (above every ID the node may issue
//     before writing another), as this cluster's;
//   - a carrier of another cluster above the node's written bound came with
//     the data (a restore that bypassed the trigger, pg_upgrade): the node
//     takes it as its bound first, and IDs reserved below it are dropped and
//     reserved again. This cluster's own carrier is covered by its own bound
//     files, which a clean shutdown lowers to the exact bound: taking it
//     again would hold the first IDs after every restart back;
//   - a restored row gives the node its value as a bound (never lowering the
//     node's) if the restoring role may give bounds, or if the value lies at
//     most max_lead ahead of the clock (as far as any role issuing IDs may
//     push the generator); otherwise nothing, and it is not carried either.
#pragma once

#include <cstdint>

#include "layout.hpp"

namespace snowflake::carrier {

// The carrier's value for a durable bound `until` (a timestamp of `layout`):
// the smallest ID of that unit, which every ID issued below the bound lies
// under, kept a positive bigint.
int64_t of_bound(const Layout& layout, int64_t until) noexcept;

// The durable bound (a timestamp of `layout`) that keeps the next ID at or
// above the carrier value `carried`.
int64_t bound_of(const Layout& layout, int64_t carried) noexcept;

// What a backend does after reading the carrier, before returning its run of
// IDs starting at `first_id`: the node's written durable bound is
// `written_until`, the carrier's largest row `carried` (0: none, or no
// carrier in this database), and the largest of the rows another cluster
// wrote `carried_elsewhere` (0: none).
struct AfterRead {
  bool adopt = false;          // make adopt_until the node's bound first
  int64_t adopt_until = 0;     // (a timestamp of the layout)
  bool reserve_again = false;  // drop the run: it may hold a carried ID
  int64_t raise_to = 0;        // the carrier's new value, if above its own
  int64_t covered_below = 0;   // the backend may return IDs below this unread
};
AfterRead after_read(const Layout& layout, int64_t written_until, int64_t carried,
                     int64_t carried_elsewhere, int64_t first_id) noexcept;

// What a restored row of value `restored` gives the node whose written bound
// is `written_until`, restored by a role that may give bounds (`may_give`) or
// not, with the clock at `clock_ms` (ms since the layout's epoch).
enum class Admission : uint8_t {
  kCovered,  // at or below the node's bound: nothing to take
  kTaken,    // the node's bound rises to bound_of(restored)
  kRefused,  // too far ahead for this role: nothing taken, nothing carried
};
Admission admit(const Layout& layout, int64_t restored, int64_t written_until, bool may_give,
                int64_t clock_ms, int64_t max_lead_ms) noexcept;

}  // namespace snowflake::carrier
