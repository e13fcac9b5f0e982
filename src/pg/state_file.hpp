// The files of pg_snowflake/: the state file (the bound above the node's IDs,
// durable.cpp states the protocol) and the vouches of databases whose
// extension was created while this server could issue nothing (durable.cpp,
// "Where the bound comes from").
#pragma once

#include <cstdint>

#include "postgres.hpp"

namespace snowflake::pg {

// Writes the bound `until` to pg_snowflake/state durably: a complete new
// file, fsynced, then renamed over the old one. Raises `elevel` on failure,
// and returns whether it succeeded.
bool write_state_file(int64_t until, int elevel);

// The bound in this data directory's state file (warning if the layout
// changed since it was written); false if there is none.
bool read_state_file(int64_t* until);

// Whether this data directory has a state file.
bool state_file_exists();

// The ID bound in the state file of another data directory (one this one was
// upgraded or copied from), or an error saying why there is none.
uint64_t read_other_state_file(const char* data_directory);

// Records durably that `extension` in `database` was created while the
// library was not preloaded and the data directory had no state file, so
// that no ID was issued under it here. A failure is a WARNING.
void vouch_for_creation(Oid database, Oid extension);

// Whether the extension `extension` is vouched for: created here, in
// `database` or in the template it was copied from, while nothing could be
// issued.
bool vouched(Oid extension);

// Removes every vouch: once the state file exists it says more, and a copy
// that skipped only the state file must not be trusted on their word.
void remove_vouches(int elevel);

}  // namespace snowflake::pg
