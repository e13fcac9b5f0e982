// The state file pg_snowflake/state: the bound above the node's IDs
// (durable.cpp states the protocol), of this data directory, of another one
// (snowflake_restore_bound) and the one Debian's hook gives (`given`); and
// the directory pg_snowflake/, which marks.hpp's files share.
#pragma once

#include <cstdint>

#include "../../core/bound.hpp"
#include "../postgres.hpp"

namespace snowflake::pg {

constexpr char kStateDirectory[] = "pg_snowflake";

// Makes pg_snowflake/ if it is missing, durably; false (raised at `elevel`)
// if it cannot.
bool make_state_directory(int elevel);

// Removes the file `path` of pg_snowflake/, durably; a failure other than its
// absence is raised at `elevel`.
void remove_state_entry(const char* path, int elevel);

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

// The bound given for data that came from another data directory:
// pg_snowflake/given, a copy of that directory's state file, which Debian's
// pg_upgradecluster hook places before pg_upgrade runs. False if there is
// none, or (with a WARNING saying why and what to do) if it cannot be read.
bool read_given_state_file(int64_t* until);

// Removes pg_snowflake/given once its bound is in the state file.
void remove_given_state_file(int elevel);

}  // namespace snowflake::pg
