// The files of pg_snowflake/: the state file (the bound above the node's IDs,
// durable.cpp states the protocol) and the vouches of databases whose
// extension was created while this server could issue nothing (durable.cpp,
// "Where the bound comes from").
#pragma once

#include <cstdint>

#include "../postgres.hpp"

namespace snowflake::pg {

// Writes the bound `until` to pg_snowflake/state durably: a complete new
// file, fsynced, then renamed over the old one. Raises `elevel` on failure,
// and returns whether it succeeded.
bool write_state_file(int64_t until, int elevel);

// The bound in this data directory's state file (warning if the layout
// changed since it was written), and the system identifier of the cluster
// that wrote it (0 for a file of 1.6 or earlier, which does not record it);
// false if there is none. The file is written with this cluster's
// GetSystemIdentifier() (version 2); another system's file is read but its
// bound is not this directory's (core/bound.hpp decides, `until` is then 0).
bool read_state_file(int64_t* until, uint64_t* system_identifier);

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

// The marks of an unknown bound, pg_snowflake/unknown: one line each, a reason
// this data directory may hold IDs its bound does not cover (bound_origin.cpp,
// "Unknown stays unknown"): a `clause` whose %s stands for `databases` (quoted
// names: "\"shop\""). A mark is appended and fsynced before the caller goes
// on; a failure is raised at `elevel` and returned as false.
bool append_unknown_mark(const char* clause, const char* databases, int elevel);
constexpr size_t kUnknownMarkMax = 256;  // bytes of one mark, its newline included

// The marks, as clauses joined with "; " into `out` (cut to `size`), the
// databases of marks of one clause listed together; false if there are none.
bool read_unknown_marks(char* out, size_t size);

// Removes the marks: an operator has given the bound.
void remove_unknown_marks(int elevel);

// The bound given for data that came from another data directory:
// pg_snowflake/given, a copy of that directory's state file, which Debian's
// pg_upgradecluster hook places before pg_upgrade runs. False if there is
// none.
bool read_given_state_file(int64_t* until);

// Removes pg_snowflake/given once its bound is in the state file.
void remove_given_state_file(int elevel);

}  // namespace snowflake::pg
