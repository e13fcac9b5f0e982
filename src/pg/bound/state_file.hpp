// The files of pg_snowflake/: the state file (the bound above the node's IDs,
// durable.cpp states the protocol) and the vouches of databases whose
// extension was created while this server could issue nothing (durable.cpp,
// "Where the bound comes from").
#pragma once

#include <cstdint>

#include "../../core/bound.hpp"
#include "../postgres.hpp"

namespace snowflake::pg {

// Writes the bound `until` to pg_snowflake/state durably, with the durable
// bound in force `durable` (at least `until`; above it in the exact bound of
// a clean shutdown) and the id of the replication origin of the bound as last
// looked up (SharedNode::register_origin): a complete new file, fsynced, then renamed over the old
// one (an old one the server may not open is removed first). Raises `elevel`
// on failure, and returns whether it succeeded.
bool write_state_file(int64_t until, int64_t durable, int elevel);

// A state file as read: its bound and the durable bound it records (version
// 3; a file of version 1 or 2 records its bound as both), and the system
// identifier of the cluster that wrote it (0 for version 1, which does not
// record it). Without `read`, `unread` says why and `problem` says it in
// words ("was damaged (0 bytes, where a state file has 48, 56 or 64)"),
// read from the beginning of "pg_snowflake/state ... when the server
// started".
struct StateFileRead {
  bool read = false;
  int64_t until = 0;
  int64_t durable = 0;
  uint64_t system_identifier = 0;
  uint16 origin_id = 0;  // the replication origin of the bound it names (version 3)
  bound::Unread unread = bound::Unread::kMissing;
  char problem[128] = "was missing";
};

// This data directory's state file (warning if the layout changed since it
// was written). It is written with this cluster's GetSystemIdentifier();
// another system's file is read but its bound is not this directory's
// (core/bound.hpp decides; `until` and `durable` are then 0). Never raises.
StateFileRead read_state_file();

// Whether this data directory has a state file.
bool state_file_exists();

// The ID bound in the state file of another data directory (one this one was
// upgraded or copied from), or an error saying why there is none; this
// server's own data directory is refused.
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
// none, or (with a WARNING saying why and what to do) if it cannot be read.
bool read_given_state_file(int64_t* until);

// Removes pg_snowflake/given once its bound is in the state file.
void remove_given_state_file(int elevel);

}  // namespace snowflake::pg
