// The durable bound's decisions, without PostgreSQL: what a clean shutdown
// saves, what a start concludes from what is on disk, what the replication
// origin that keeps a second copy of the durable bound changes, what a
// replayed bound record and an operator's bound change, and what a creation
// or a drop of the extension records. The glue (src/pg/bound/) reads and writes the files and
// WAL and calls these; so does the deterministic simulator
// (test/simulation/), which drives them through crashes, restores, copies and
// pg_upgrade. src/pg/bound/durable.cpp states the durability protocol,
// src/pg/bound/bound_origin.cpp where the bound comes from when the state
// file is missing and why an unknown bound stays unknown.
//
// The rules:
//   - IDs are issued only under a known bound;
//   - a start takes the state file's bound, raised to pg_snowflake/given's if
//     there is one (the old bound Debian's hook carries over pg_upgrade); with
//     neither it checks the databases; marks of an unknown bound, unless a
//     given bound answers them, keep it unknown; a state file that cannot be
//     read (damaged, unreadable) counts as none, its reason kept, and takes
//     no given bound (that one covers another directory's IDs, not the ones
//     the unreadable file covered);
//   - the replication origin "snowflake" (WAL-logged, checkpointed, replayed
//     and copied with the data directory: src/pg/bound/bound_register.cpp)
//     holds the durable bound of every write since it was established. Once
//     it can be read (after recovery, before the first ID), an origin above
//     the durable bound the state file records means the file is older than
//     the data directory (a backup's, a standby's, an earlier copy put back):
//     the node takes the origin's bound. While the databases are to be
//     checked (no state file read), an origin with a state answers: its bound
//     is known. Marks of an unknown bound still win over it;
//   - every write of a bound by a backend or an operator makes the durable
//     bound, and the origin, rise above the one the state file records, so an
//     older copy of the file always records less than the origin;
//   - a state file written by another system (its system identifier recorded
//     and not this cluster's: pg_snowflake/ copied from another node, a
//     restore that mixes two clusters' files) vouches for none of this data
//     directory's IDs: the bound is unknown, whatever else is on disk; one
//     that records no system identifier (1.6 and earlier) is trusted;
//     pg_snowflake/given and an operator's snowflake_restore_bound() are
//     another directory's bound by design, whatever system wrote them;
//   - an operator's bound and a replayed bound record make it known and
//     answer the marks; neither lowers the bound;
//   - pg_upgrade's creation of the extension marks the bound unknown, even
//     over a state file (it vouches only for its own data directory's IDs); a
//     creation while the databases are checked vouches; one while the bound
//     is unknown changes nothing; a drop while it is not known marks it.
#pragma once

#include <cstdint>

#include "layout.hpp"

namespace snowflake::bound {

// Whether the node knows a bound above every ID its data directory has issued.
enum class State : uint32_t {
  kKnown,     // from the state file, a replayed bound record, or an operator
  kChecking,  // the state file was missing at start; the databases are being checked
  kUnknown,   // ... and the check found the extension, or marks: refused until an operator says
};

// Whether a durable bound may be made (and so IDs issued): only a known one.
bool may_make_durable(State state) noexcept;

// What the node has written: the bound, and whether a state file holds it;
// `durable` is the durable bound in force when it was written (what the
// replication origin then held), above `until` only in the exact bound a
// clean shutdown writes.
struct Written {
  int64_t until = 0;
  bool state_file = false;
  int64_t durable = 0;
};

// The bound a clean shutdown writes instead of the durable one (every backend
// is gone, so the unit after the last ID is exact), so a quick restart does
// not start ahead of the clock; 0 if the durable bound is no higher.
int64_t exact_at_shutdown(const Layout& layout, int64_t last_id, int64_t durable_until) noexcept;

// Which system wrote a state file, as far as the file says.
enum class Writer : uint8_t {
  kThisSystem,   // its system identifier is this cluster's
  kNotRecorded,  // a file of 1.6 or earlier (version 1): it cannot say
  kOtherSystem,  // another cluster's system identifier
};

// The writer of a state file that records `recorded` (0: none, as version 1)
// read by the cluster of system identifier `ours`.
Writer writer_of(uint64_t recorded, uint64_t ours) noexcept;

// Why a start read no state file.
enum class Unread : uint8_t {
  kMissing,     // there is none
  kDamaged,     // not a state file: another size, magic or version, a wrong checksum
  kUnreadable,  // it could not be opened or read (permissions, I/O)
};

// What a start finds in pg_snowflake/.
struct OnDisk {
  bool state_file = false;  // pg_snowflake/state, read, with its bound
  int64_t state_until = 0;
  int64_t state_durable = 0;  // the durable bound it records (version 3; else its bound)
  Writer state_writer = Writer::kThisSystem;
  Unread state_unread = Unread::kMissing;  // without state_file: why
  bool given = false;  // pg_snowflake/given (not read in pg_upgrade's own server)
  int64_t given_until = 0;
  bool marks = false;  // pg_snowflake/unknown
};

// Why a start does not know its bound.
enum class Reason : uint8_t {
  kNone,                 // known
  kStateFileMissing,     // no state file and no given bound: the databases are checked
  kStateFileDamaged,     // a state file that is not one: the same
  kStateFileUnreadable,  // a state file that cannot be read: the same
  kMarked,               // marks of an unknown bound that no given bound answered
  kForeignStateFile,     // the state file was written by another system
};

// What a start concludes.
struct Start {
  State state = State::kChecking;
  Reason reason = Reason::kStateFileMissing;
  Written written;              // the generator restores written.until
  bool take_given = false;      // write written.until to the state file, then remove
                                // the marks and pg_snowflake/given
  bool remove_vouches = false;  // a state file says more than the vouches of creations
};
Start at_start(const OnDisk& disk) noexcept;

// What the redo of a bound record of `until` does (the durable bound it
// records rises with it).
struct Replay {
  bool write_state_file = false;  // the state file gets written.until
  bool remove_vouches = false;    // ... and is the first one: the vouches go
  bool remove_marks = false;      // the primary knew its bound: the marks have their answer
  Written written;
  State state = State::kKnown;
};
Replay at_replay(const Written& written, State state, int64_t until) noexcept;

// snowflake_restore_bound() and snowflake_set_bound(): the bound made durable
// for an operator's `until`, never below the one written.
int64_t adopted(int64_t until, const Written& written) noexcept;

// The bound a backend's or an operator's write makes durable for `candidate`
// (above the one written): raised past the durable bound the state file
// records when that is above its bound (the exact bound of a clean shutdown),
// so that every write after a state file records more than that file, and an
// older copy of the file shows as older.
int64_t to_write(int64_t candidate, const Written& written) noexcept;

// The value the replication origin is established with (its first advance):
// the durable bound in force.
int64_t origin_value(const Written& written) noexcept;

// What the replication origin's value, read once per start after recovery
// (before the first ID of the start, or when the databases are to be
// checked), changes.
enum class Finding : uint8_t {
  kNothing,         // no origin with a state, nothing above the file, or marks
  kStateFileOlder,  // known: the origin is above the state file's durable bound
  kAnswered,        // checking: the origin gives the bound
};
struct FromOrigin {
  Finding finding = Finding::kNothing;
  State state = State::kKnown;
  Written written;              // with a finding: the generator restores written.until,
                                // and the state file gets it
  bool remove_vouches = false;  // the first state file: the vouches go
};
FromOrigin at_origin(State state, const Written& written, bool origin_has_state,
                     int64_t origin_until) noexcept;

// Whether making a bound known answers the marks on disk (they are removed).
bool answers_marks(State state) noexcept;

// What a creation of the extension records.
enum class Creation : uint8_t {
  kNothing,         // the state file vouches already
  kWriteStateFile,  // known, no state file yet: an empty bound, in WAL and the state file
  kVouch,           // checking: nothing was issued under it, a vouch
  kStaysUnknown,    // unknown: nothing vouches (a WARNING)
  kMarkUnknown,     // pg_upgrade's server brings it: the bound is marked unknown
};
Creation at_creation(bool binary_upgrade, State state, bool state_file_written) noexcept;

// Whether a drop of the extension marks the bound unknown: its tables keep the
// IDs it issued, and a check after the drop would find nothing.
bool drop_marks_unknown(State state) noexcept;

// The check of the databases after a start without a state file concluded:
// the extension `found` in a database (not vouched for) marks the bound
// unknown; found nowhere, it is known. Only while checking.
State after_check(State state, bool found) noexcept;

}  // namespace snowflake::bound
