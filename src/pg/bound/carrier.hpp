// The dump's carrier of the bound: the table snowflake_dump_bound of each
// database with the extension (carrier.cpp states the protocol).
#pragma once

#include <cstdint>

namespace snowflake::pg {

namespace carrier_detail {
// This backend may return IDs below this without reading the carrier (0: read
// it before the next ID).
extern int64_t covered_below;
}  // namespace carrier_detail

// The hot path's one compare: whether the run ending at `last_id` lies below
// the carrier this backend last saw.
inline bool carrier_covers(int64_t last_id) {
  return last_id < carrier_detail::covered_below;
}

// Before a run of IDs from `first_id` is returned, when carrier_covers() said
// no: reads this database's carrier, takes a bound found above the node's as
// the node's, and raises the carrier to the node's written bound. False: the
// run may hold IDs a restore brought, and must be dropped and reserved again.
bool carry(int64_t first_id);

// The relation cache callback that forgets the carrier when its table changes
// or goes. From _PG_init.
void install_carrier_callbacks();

}  // namespace snowflake::pg
