// The durable bound's decisions; bound.hpp states the rules.
#include "bound.hpp"

#include <algorithm>

namespace snowflake::bound {

bool may_make_durable(State state) noexcept {
  return state == State::kKnown;
}

int64_t exact_at_shutdown(const Layout& layout, int64_t last_id, int64_t durable_until) noexcept {
  const int64_t exact = layout.timestamp_of(last_id) + 1;
  return exact < durable_until ? exact : 0;
}

Writer writer_of(uint64_t recorded, uint64_t ours) noexcept {
  if (recorded == 0) return Writer::kNotRecorded;
  return recorded == ours ? Writer::kThisSystem : Writer::kOtherSystem;
}

Start at_start(const OnDisk& disk) noexcept {
  Start start;
  // Another system's state file is no state file of this data directory, and
  // its bound no bound here: unknown, as a given bound cannot answer for the
  // IDs this directory issued itself. Nothing is taken or removed; an
  // operator's bound writes this system's state file over it.
  if (disk.state_file && disk.state_writer == Writer::kOtherSystem) {
    start.state = State::kUnknown;
    start.reason = Reason::kForeignStateFile;
    return start;
  }
  start.written.until = disk.state_file ? disk.state_until : 0;
  start.written.state_file = disk.state_file;
  start.written.durable = disk.state_file ? std::max(disk.state_until, disk.state_durable) : 0;
  // A bound given for data from another data directory: the state file's from
  // now on, and it covers what the marks were about. Not over a state file
  // that cannot be read: that one covered this directory's own IDs, which the
  // given bound does not.
  const bool unread = !disk.state_file && disk.state_unread != Unread::kMissing;
  start.take_given = disk.given && !unread;
  if (start.take_given) {
    start.written.until =
        disk.state_file ? std::max(disk.state_until, disk.given_until) : disk.given_until;
    start.written.state_file = true;
    start.written.durable = std::max(start.written.durable, start.written.until);
  }
  const bool unknown = !start.take_given && disk.marks;
  start.remove_vouches = start.written.state_file;
  if (unknown) {
    start.state = State::kUnknown;
    start.reason = Reason::kMarked;
  } else if (start.written.state_file) {
    start.state = State::kKnown;
    start.reason = Reason::kNone;
  } else {
    start.state = State::kChecking;
    start.reason = disk.state_unread == Unread::kDamaged      ? Reason::kStateFileDamaged
                   : disk.state_unread == Unread::kUnreadable ? Reason::kStateFileUnreadable
                                                              : Reason::kStateFileMissing;
  }
  return start;
}

int64_t to_write(int64_t candidate, const Written& written) noexcept {
  const bool exact_below = written.durable > written.until;
  return exact_below ? std::max(candidate, written.durable + 1) : candidate;
}

int64_t origin_value(const Written& written) noexcept {
  return std::max(written.until, written.durable);
}

FromOrigin at_origin(State state, const Written& written, bool origin_has_state,
                     int64_t origin_until) noexcept {
  FromOrigin from;
  from.state = state;
  from.written = written;
  if (!origin_has_state) return from;
  switch (state) {
    case State::kKnown:
      // The origin has every durable bound since it was established; the
      // state file records the one in force when it was written.
      if (origin_until <= origin_value(written)) return from;
      from.finding = Finding::kStateFileOlder;
      break;
    case State::kChecking:
      from.finding = Finding::kAnswered;
      from.state = State::kKnown;
      break;
    case State::kUnknown:
      // Marks: data its bound may not cover (pg_upgrade's, another system's
      // state file, the check's finding); the origin covers only this data
      // directory's own IDs.
      return from;
  }
  from.written.until = std::max(origin_until, written.until);
  from.written.durable = std::max(from.written.until, written.durable);
  from.remove_vouches = !written.state_file;
  from.written.state_file = true;
  return from;
}

Replay at_replay(const Written& written, State state, int64_t until) noexcept {
  Replay replay;
  replay.written = written;
  // Kept in the state file too, so a standby that restarts before its
  // promotion does not depend on WAL it has already recycled (and, for the
  // empty bound a creation of the extension writes, vouches as its primary does).
  replay.write_state_file = until > written.until || !written.state_file;
  if (replay.write_state_file) {
    replay.remove_vouches = !written.state_file;
    replay.written.until = std::max(until, written.until);
    replay.written.durable = std::max(replay.written.until, written.durable);
    replay.written.state_file = true;
  }
  replay.remove_marks = answers_marks(state);
  replay.state = State::kKnown;
  return replay;
}

int64_t adopted(int64_t until, const Written& written) noexcept {
  return std::max(until, written.until);
}

bool answers_marks(State state) noexcept {
  return state == State::kUnknown;
}

Creation at_creation(bool binary_upgrade, State state, bool state_file_written) noexcept {
  // A state file vouches only for the IDs its own data directory issued; what
  // pg_upgrade brings may hold others.
  if (binary_upgrade) return Creation::kMarkUnknown;
  switch (state) {
    case State::kKnown:
      return state_file_written ? Creation::kNothing : Creation::kWriteStateFile;
    case State::kChecking:
      return Creation::kVouch;
    case State::kUnknown:
      break;
  }
  return Creation::kStaysUnknown;
}

bool drop_marks_unknown(State state) noexcept {
  const bool known = state == State::kKnown;
  return !known;
}

State after_check(State state, bool found) noexcept {
  if (state != State::kChecking) return state;
  return found ? State::kUnknown : State::kKnown;
}

}  // namespace snowflake::bound
