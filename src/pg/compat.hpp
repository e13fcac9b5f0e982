// What differs between the PostgreSQL versions snowflake supports, in one
// place, so that the rest of the glue reads the same on every version.
#pragma once

#include "postgres.hpp"

namespace snowflake::pg {

// Whether the checkpointer has taken up a non-empty synchronous_standby_names
// (so commits wait for standbys). Minor releases since 2025 keep this as a
// flag in sync_standbys_status; earlier ones as the bool
// sync_standbys_defined. The caller holds SyncRepLock.
inline bool sync_standbys_defined(const WalSndCtlData* control) {
#ifdef SYNC_STANDBY_DEFINED
  return (control->sync_standbys_status & SYNC_STANDBY_DEFINED) != 0;
#else
  return control->sync_standbys_defined;
#endif
}

}  // namespace snowflake::pg
