// The durable bound's decisions (src/core/bound.hpp): the exact bound of a
// clean shutdown, what a start concludes from pg_snowflake/, what the
// replication origin's value changes, what a replayed record and an
// operator's bound change, and what creations, drops and the check of the
// databases record. The glue and the simulator call these.
#include <gtest/gtest.h>

#include <cstdint>

#include "bound.hpp"
#include "layout.hpp"

namespace snowflake {
namespace {

using bound::Creation;
using bound::OnDisk;
using bound::Reason;
using bound::State;

TEST(Bound, OnlyAKnownBoundIsMadeDurable) {
  EXPECT_TRUE(bound::may_make_durable(State::kKnown));
  EXPECT_FALSE(bound::may_make_durable(State::kChecking));
  EXPECT_FALSE(bound::may_make_durable(State::kUnknown));
}

TEST(Bound, ACleanShutdownSavesTheUnitAfterTheLastId) {
  const Layout layout;  // 1 ms units
  const int64_t last = layout.max_id(1000);
  EXPECT_EQ(bound::exact_at_shutdown(layout, last, 5000), 1001);
  // The durable bound no higher: nothing to write.
  EXPECT_EQ(bound::exact_at_shutdown(layout, last, 1001), 0);
  EXPECT_EQ(bound::exact_at_shutdown(layout, last, 900), 0);
}

TEST(Bound, AStartTakesTheStateFile) {
  OnDisk disk;
  disk.state_file = true;
  disk.state_until = 700;
  const bound::Start start = bound::at_start(disk);
  EXPECT_EQ(start.state, State::kKnown);
  EXPECT_EQ(start.reason, Reason::kNone);
  EXPECT_EQ(start.written.until, 700);
  EXPECT_TRUE(start.written.state_file);
  EXPECT_FALSE(start.take_given);
  EXPECT_TRUE(start.remove_vouches);
}

TEST(Bound, AStartWithoutAStateFileChecksTheDatabases) {
  const bound::Start start = bound::at_start(OnDisk{});
  EXPECT_EQ(start.state, State::kChecking);
  EXPECT_EQ(start.reason, Reason::kStateFileMissing);
  EXPECT_EQ(start.written.until, 0);
  EXPECT_FALSE(start.written.state_file);
  EXPECT_FALSE(start.remove_vouches);
}

TEST(Bound, TheWriterOfAStateFileIsItsRecordedSystemIdentifier) {
  EXPECT_EQ(bound::writer_of(7, 7), bound::Writer::kThisSystem);
  EXPECT_EQ(bound::writer_of(8, 7), bound::Writer::kOtherSystem);
  EXPECT_EQ(bound::writer_of(0, 7), bound::Writer::kNotRecorded);  // version 1
}

TEST(Bound, AnotherSystemsStateFileLeavesTheBoundUnknown) {
  OnDisk disk;
  disk.state_file = true;
  disk.state_until = 700;
  disk.state_writer = bound::Writer::kOtherSystem;
  bound::Start start = bound::at_start(disk);
  EXPECT_EQ(start.state, State::kUnknown);
  EXPECT_EQ(start.reason, Reason::kForeignStateFile);
  EXPECT_FALSE(bound::may_make_durable(start.state));
  // Its bound is not this directory's: nothing restored, no state file of ours.
  EXPECT_EQ(start.written.until, 0);
  EXPECT_FALSE(start.written.state_file);
  EXPECT_FALSE(start.remove_vouches);
  // A given bound answers for the data pg_upgrade brought, not for this
  // directory's own IDs: still unknown, and given is left for later.
  disk.given = true;
  disk.given_until = 900;
  start = bound::at_start(disk);
  EXPECT_EQ(start.state, State::kUnknown);
  EXPECT_EQ(start.reason, Reason::kForeignStateFile);
  EXPECT_FALSE(start.take_given);
  disk.marks = true;
  EXPECT_EQ(bound::at_start(disk).reason, Reason::kForeignStateFile);
  // An operator's bound then makes it known, from this system's state file on.
  EXPECT_EQ(bound::adopted(800, start.written), 800);
  EXPECT_TRUE(bound::answers_marks(start.state));
}

TEST(Bound, AStateFileThatCannotSayWhoWroteItIsTrusted) {
  OnDisk disk;
  disk.state_file = true;
  disk.state_until = 700;
  disk.state_writer = bound::Writer::kNotRecorded;  // 1.6 or earlier
  const bound::Start start = bound::at_start(disk);
  EXPECT_EQ(start.state, State::kKnown);
  EXPECT_EQ(start.reason, Reason::kNone);
  EXPECT_EQ(start.written.until, 700);
  EXPECT_TRUE(start.written.state_file);
}

TEST(Bound, MarksKeepTheBoundUnknownOverAStateFile) {
  OnDisk disk;
  disk.state_file = true;  // a tried-out cluster's, or one an operator's bound did not reach
  disk.state_until = 700;
  disk.marks = true;
  const bound::Start start = bound::at_start(disk);
  EXPECT_EQ(start.state, State::kUnknown);
  EXPECT_EQ(start.reason, Reason::kMarked);
  EXPECT_EQ(start.written.until, 700);  // restored all the same
  disk.state_file = false;
  EXPECT_EQ(bound::at_start(disk).state, State::kUnknown);
}

TEST(Bound, AGivenBoundAnswersTheMarksAndNeverLowersTheStateFile) {
  OnDisk disk;
  disk.given = true;
  disk.given_until = 900;
  disk.marks = true;
  bound::Start start = bound::at_start(disk);
  EXPECT_EQ(start.state, State::kKnown);
  EXPECT_TRUE(start.take_given);
  EXPECT_EQ(start.written.until, 900);
  EXPECT_TRUE(start.written.state_file);
  disk.state_file = true;
  disk.state_until = 1200;
  start = bound::at_start(disk);
  EXPECT_EQ(start.written.until, 1200);
  disk.state_until = 300;
  EXPECT_EQ(bound::at_start(disk).written.until, 900);
}

TEST(Bound, AReplayedRecordMakesTheBoundKnownAndNeverLowersIt) {
  bound::Replay replay = bound::at_replay({0, false}, State::kUnknown, 500);
  EXPECT_TRUE(replay.write_state_file);
  EXPECT_TRUE(replay.remove_vouches);
  EXPECT_TRUE(replay.remove_marks);
  EXPECT_EQ(replay.state, State::kKnown);
  EXPECT_EQ(replay.written.until, 500);
  EXPECT_TRUE(replay.written.state_file);
  // Below the state file: nothing written, the marks answered all the same.
  replay = bound::at_replay({800, true}, State::kUnknown, 500);
  EXPECT_FALSE(replay.write_state_file);
  EXPECT_TRUE(replay.remove_marks);
  EXPECT_EQ(replay.written.until, 800);
  replay = bound::at_replay({800, true}, State::kKnown, 900);
  EXPECT_TRUE(replay.write_state_file);
  EXPECT_FALSE(replay.remove_vouches);
  EXPECT_FALSE(replay.remove_marks);
  EXPECT_EQ(replay.written.until, 900);
}

TEST(Bound, AnOperatorsBoundNeverLowersTheOneWritten) {
  EXPECT_EQ(bound::adopted(500, {800, true}), 800);
  EXPECT_EQ(bound::adopted(900, {800, true}), 900);
  EXPECT_TRUE(bound::answers_marks(State::kUnknown));
  EXPECT_FALSE(bound::answers_marks(State::kChecking));
  EXPECT_FALSE(bound::answers_marks(State::kKnown));
}

TEST(Bound, PgUpgradesCreationMarksTheBoundUnknownWhateverTheStateFile) {
  for (State state : {State::kKnown, State::kChecking, State::kUnknown}) {
    EXPECT_EQ(bound::at_creation(true, state, true), Creation::kMarkUnknown);
    EXPECT_EQ(bound::at_creation(true, state, false), Creation::kMarkUnknown);
  }
}

TEST(Bound, ACreationVouchesOnlyWhileNothingCanBeIssued) {
  EXPECT_EQ(bound::at_creation(false, State::kKnown, true), Creation::kNothing);
  EXPECT_EQ(bound::at_creation(false, State::kKnown, false), Creation::kWriteStateFile);
  EXPECT_EQ(bound::at_creation(false, State::kChecking, false), Creation::kVouch);
  // Unknown stays unknown: a creation vouches for nothing.
  EXPECT_EQ(bound::at_creation(false, State::kUnknown, false), Creation::kStaysUnknown);
  EXPECT_EQ(bound::at_creation(false, State::kUnknown, true), Creation::kStaysUnknown);
}

TEST(Bound, ADropMarksTheBoundUnknownUnlessItIsKnown) {
  EXPECT_FALSE(bound::drop_marks_unknown(State::kKnown));
  EXPECT_TRUE(bound::drop_marks_unknown(State::kChecking));
  EXPECT_TRUE(bound::drop_marks_unknown(State::kUnknown));
}

TEST(Bound, AStateFileThatCannotBeReadIsCheckedForWithItsReason) {
  OnDisk disk;
  disk.state_unread = bound::Unread::kDamaged;
  bound::Start start = bound::at_start(disk);
  EXPECT_EQ(start.state, State::kChecking);
  EXPECT_EQ(start.reason, Reason::kStateFileDamaged);
  EXPECT_FALSE(start.written.state_file);
  disk.state_unread = bound::Unread::kUnreadable;
  start = bound::at_start(disk);
  EXPECT_EQ(start.state, State::kChecking);
  EXPECT_EQ(start.reason, Reason::kStateFileUnreadable);
  // The marks still win.
  disk.marks = true;
  EXPECT_EQ(bound::at_start(disk).state, State::kUnknown);
  EXPECT_EQ(bound::at_start(disk).reason, Reason::kMarked);
}

TEST(Bound, AGivenBoundDoesNotStandForAStateFileThatCannotBeRead) {
  OnDisk disk;
  disk.given = true;
  disk.given_until = 900;
  disk.state_unread = bound::Unread::kDamaged;
  bound::Start start = bound::at_start(disk);
  EXPECT_FALSE(start.take_given);
  EXPECT_EQ(start.state, State::kChecking);
  EXPECT_EQ(start.reason, Reason::kStateFileDamaged);
  disk.marks = true;  // pg_upgrade's
  start = bound::at_start(disk);
  EXPECT_FALSE(start.take_given);
  EXPECT_EQ(start.state, State::kUnknown);
  // A missing one: the given bound is taken, as before.
  disk.state_unread = bound::Unread::kMissing;
  EXPECT_TRUE(bound::at_start(disk).take_given);
}

TEST(Bound, AStartKeepsTheDurableBoundTheStateFileRecords) {
  OnDisk disk;
  disk.state_file = true;
  disk.state_until = 700;  // the exact bound of a clean shutdown
  disk.state_durable = 1000;
  bound::Start start = bound::at_start(disk);
  EXPECT_EQ(start.written.until, 700);
  EXPECT_EQ(start.written.durable, 1000);
  // Versions 1 and 2 record none: their bound.
  disk.state_durable = 0;
  EXPECT_EQ(bound::at_start(disk).written.durable, 700);
  // A given bound above both.
  disk.given = true;
  disk.given_until = 1500;
  start = bound::at_start(disk);
  EXPECT_EQ(start.written.until, 1500);
  EXPECT_EQ(start.written.durable, 1500);
}

TEST(Bound, EveryWriteRecordsMoreThanTheStateFileBeforeIt) {
  // After a clean shutdown the file holds the exact bound (700) below the
  // durable one (1000): the first write goes past 1000.
  EXPECT_EQ(bound::to_write(800, {700, true, 1000}), 1001);
  EXPECT_EQ(bound::to_write(1200, {700, true, 1000}), 1200);
  // Otherwise the candidate as it is.
  EXPECT_EQ(bound::to_write(800, {700, true, 700}), 800);
  EXPECT_EQ(bound::to_write(800, {0, false, 0}), 800);
  EXPECT_EQ(bound::origin_value({700, true, 1000}), 1000);
  EXPECT_EQ(bound::origin_value({700, true, 0}), 700);
}

TEST(Bound, AnOriginAboveTheStateFileMeansTheFileIsOlder) {
  // A backup's file (durable bound 500) put back; the origin has 900.
  bound::FromOrigin from = bound::at_origin(State::kKnown, {500, true, 500}, true, 900);
  EXPECT_EQ(from.finding, bound::Finding::kStateFileOlder);
  EXPECT_EQ(from.state, State::kKnown);
  EXPECT_EQ(from.written.until, 900);
  EXPECT_EQ(from.written.durable, 900);
  EXPECT_TRUE(from.written.state_file);
  EXPECT_FALSE(from.remove_vouches);
  // The file of a clean shutdown: its exact bound below the origin, its
  // durable bound not: nothing (the exact bound stays).
  from = bound::at_origin(State::kKnown, {700, true, 1000}, true, 1000);
  EXPECT_EQ(from.finding, bound::Finding::kNothing);
  EXPECT_EQ(from.written.until, 700);
  // The origin at or below: nothing.
  EXPECT_EQ(bound::at_origin(State::kKnown, {900, true, 900}, true, 900).finding,
            bound::Finding::kNothing);
  EXPECT_EQ(bound::at_origin(State::kKnown, {900, true, 900}, true, 400).finding,
            bound::Finding::kNothing);
  // No origin with a state: nothing to compare.
  EXPECT_EQ(bound::at_origin(State::kKnown, {500, true, 500}, false, 0).finding,
            bound::Finding::kNothing);
}

TEST(Bound, AnOriginAnswersTheCheckButNotTheMarks) {
  bound::FromOrigin from = bound::at_origin(State::kChecking, {0, false, 0}, true, 900);
  EXPECT_EQ(from.finding, bound::Finding::kAnswered);
  EXPECT_EQ(from.state, State::kKnown);
  EXPECT_EQ(from.written.until, 900);
  EXPECT_EQ(from.written.durable, 900);
  EXPECT_TRUE(from.written.state_file);
  EXPECT_TRUE(from.remove_vouches);
  // Without a state in the origin the check goes on.
  from = bound::at_origin(State::kChecking, {0, false, 0}, false, 0);
  EXPECT_EQ(from.finding, bound::Finding::kNothing);
  EXPECT_EQ(from.state, State::kChecking);
  // Marks of an unknown bound win.
  from = bound::at_origin(State::kUnknown, {300, true, 300}, true, 900);
  EXPECT_EQ(from.finding, bound::Finding::kNothing);
  EXPECT_EQ(from.state, State::kUnknown);
  EXPECT_EQ(from.written.until, 300);
}

TEST(Bound, AReplayedRecordRaisesTheDurableBoundItRecords) {
  bound::Replay replay = bound::at_replay({700, true, 1000}, State::kKnown, 1100);
  EXPECT_EQ(replay.written.until, 1100);
  EXPECT_EQ(replay.written.durable, 1100);
  replay = bound::at_replay({700, true, 1000}, State::kKnown, 800);
  EXPECT_EQ(replay.written.until, 800);
  EXPECT_EQ(replay.written.durable, 1000);
}

TEST(Bound, TheCheckConcludesOnlyWhileChecking) {
  EXPECT_EQ(bound::after_check(State::kChecking, true), State::kUnknown);
  EXPECT_EQ(bound::after_check(State::kChecking, false), State::kKnown);
  EXPECT_EQ(bound::after_check(State::kKnown, true), State::kKnown);
  EXPECT_EQ(bound::after_check(State::kUnknown, false), State::kUnknown);
}

}  // namespace
}  // namespace snowflake
