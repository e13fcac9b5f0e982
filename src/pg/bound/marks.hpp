// The marks of pg_snowflake/ beside the state file, which say what the data
// directory holds when the state file cannot: the vouches of databases whose
// extension was created while this server could issue nothing, and the marks
// of an unknown bound (bound_origin.cpp, "Where the bound comes from" and
// "Unknown stays unknown").
#pragma once

#include <cstddef>

#include "../postgres.hpp"

namespace snowflake::pg {

constexpr char kUnknownMarksPath[] = "pg_snowflake/unknown";

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

}  // namespace snowflake::pg
