// The end of a layout's time (layout_end.hpp): where each preset ends, the
// year of warnings before it, the last unit (1 ms, 10 ms, 1 s) against the
// generator's own refusal, layouts whose end lies far past timestamptz, clock
// readings at the ends of int64, and when the daily warning is due.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <string>

#include "generator.hpp"
#include "layout_end.hpp"
#include "layout_text.hpp"
#include "test_support.hpp"

namespace snowflake {
namespace {

using unit_test::unix_ms_utc;

constexpr int64_t kYear = kLayoutEndWarningMs;
constexpr int64_t kDay = kLayoutEndWarningIntervalMs;

Layout preset(const char* text) {
  const ParsedLayout parsed = parse_layout(text);
  EXPECT_EQ(parsed.problem, LayoutTextProblem::kOk) << text;
  return Layout(parsed.parts);
}

// The constants are usable at compile time.
static_assert(layout_end(Layout{}, 0).state == LayoutEndState::kFar, "1970 is far from 2080");
static_assert(kLayoutEndWarningMs == 31536000000, "a year of 365 days");

TEST(LayoutEnd, TwittersEndsIn2080) {
  const Layout layout;
  // snowflake_timestamp of the largest ID: 2080-07-10 17:30:30.208 UTC.
  const int64_t end = unix_ms_utc(2080, 7, 10, 17, 30, 30, 208);
  const int64_t now = unix_ms_utc(2026, 11, 27);
  const LayoutEnd e = layout_end(layout, now);
  EXPECT_EQ(e.ends_at_unix_ms, end);
  EXPECT_EQ(e.ends_at_unix_ms, layout.unix_ms(layout.max_issued_timestamp()));
  EXPECT_EQ(e.remaining_ms, end - now);
  EXPECT_EQ(e.state, LayoutEndState::kFar);
}

TEST(LayoutEnd, AYearBeforeTheEndIsNear) {
  const Layout layout;
  const int64_t end = layout.last_issued_unix_ms();
  EXPECT_EQ(layout_end(layout, end - kYear - 1).state, LayoutEndState::kFar);
  EXPECT_EQ(layout_end(layout, end - kYear).state, LayoutEndState::kNear);
  EXPECT_EQ(layout_end(layout, end - kYear).remaining_ms, kYear);
  EXPECT_EQ(layout_end(layout, end - 1).state, LayoutEndState::kNear);
  // At the end itself the last unit is still issued; one unit later not.
  EXPECT_EQ(layout_end(layout, end).state, LayoutEndState::kNear);
  EXPECT_EQ(layout_end(layout, end).remaining_ms, 0);
  EXPECT_EQ(layout_end(layout, end + 1).state, LayoutEndState::kEnded);
  EXPECT_EQ(layout_end(layout, end + 1).remaining_ms, 0) << "never negative";
}

// Baidu's DefaultUidGenerator: 28 bits of seconds from 2016-05-20 ran out
// on 2024-11-20 (the incident this warns of).
TEST(LayoutEnd, BaidusRanOutOn20241120) {
  const Layout layout = preset("baidu");
  const LayoutEnd e = layout_end(layout, unix_ms_utc(2024, 1, 1));
  // Its epoch is 2016-05-20 in Beijing (UTC+8); the end 2024-11-20 13:24:15 UTC.
  EXPECT_EQ(e.ends_at_unix_ms, 1463673600000 + ((int64_t{1} << 28) - 1) * 1000);
  EXPECT_EQ(e.ends_at_unix_ms, unix_ms_utc(2024, 11, 20, 13, 24, 15));
  EXPECT_GE(e.ends_at_unix_ms, unix_ms_utc(2024, 11, 20));
  EXPECT_LT(e.ends_at_unix_ms, unix_ms_utc(2024, 11, 21));
  EXPECT_EQ(e.state, LayoutEndState::kNear) << "ten months before: warned";
  EXPECT_EQ(layout_end(layout, unix_ms_utc(2023, 6, 1)).state, LayoutEndState::kFar);
  // The last second is issued to its end.
  EXPECT_EQ(layout_end(layout, e.ends_at_unix_ms + 999).state, LayoutEndState::kNear);
  EXPECT_EQ(layout_end(layout, e.ends_at_unix_ms + 1000).state, LayoutEndState::kEnded);
  EXPECT_EQ(layout_end(layout, unix_ms_utc(2026, 11, 27)).state, LayoutEndState::kEnded);
}

// The end is where the generator refuses, in every unit: the clock within
// the last unit issues, one unit later it is kTimestampExhausted.
TEST(LayoutEnd, AgreesWithTheGeneratorInEveryUnit) {
  for (const char* text : {"time:12 worker:5 sequence:12 epoch:1000",
                           "time:12 worker:5 sequence:12 unit:10ms epoch:1000",
                           "time:12 worker:5 sequence:12 unit:1s epoch:1000",
                           "time:12 sequence:8 worker:16 unit:250ms epoch:1000"}) {
    SCOPED_TRACE(text);
    const Layout layout = preset(text);
    const int64_t end = layout_end(layout, 0).ends_at_unix_ms;
    EXPECT_EQ(end, 1000 + ((int64_t{1} << 12) - 1) * layout.unit_ms());
    for (int64_t now = end - 2 * layout.unit_ms(); now <= end + 2 * layout.unit_ms(); ++now) {
      GeneratorState state;
      Generator generator(state, layout);
      generator.publish_durable(INT64_MAX);
      const Outcome o = generator.next(now - layout.epoch_ms(), 1, Policy{});
      const bool ended = layout_end(layout, now).state == LayoutEndState::kEnded;
      EXPECT_EQ(o.step, ended ? Step::kTimestampExhausted : Step::kIssued)
          << "clock at " << now - end << " ms from the end: " << static_cast<int>(o.step);
    }
  }
}

// Sonyflake counts 10 ms: its end is a multiple of 10 ms after its epoch.
TEST(LayoutEnd, SonyflakesTenMillisecondUnits) {
  const Layout layout = preset("sonyflake");
  const int64_t end = layout_end(layout, 0).ends_at_unix_ms;
  EXPECT_EQ(end, 1409529600000 + ((int64_t{1} << 39) - 1) * 10);
  EXPECT_EQ((end - layout.epoch_ms()) % 10, 0);
  EXPECT_EQ(layout_end(layout, end + 9).state, LayoutEndState::kNear);
  EXPECT_EQ(layout_end(layout, end + 10).state, LayoutEndState::kEnded);
}

// In a 64-bit layout the generator stops where the sign bit is reached, well
// before the time field's own end: the end is that, Discord's in 2084.
TEST(LayoutEnd, SixtyFourBitLayoutsEndAtTheSignBit) {
  const Layout layout = preset("discord");
  const LayoutEnd e = layout_end(layout, 0);
  EXPECT_EQ(e.ends_at_unix_ms, layout.unix_ms(layout.max_issued_timestamp()));
  EXPECT_LT(e.ends_at_unix_ms, layout.last_unix_ms());
  EXPECT_GE(e.ends_at_unix_ms, unix_ms_utc(2084, 9, 5));
  EXPECT_LT(e.ends_at_unix_ms, unix_ms_utc(2084, 9, 7));
}

// The widest layouts end millions of years after timestamptz does (the year
// 294276): computed all the same, without overflow, at any clock reading.
TEST(LayoutEnd, WidestLayoutsAndExtremeClocks) {
  const Layout widest(LayoutParts{62, 0, 0, 1, kTwitterOrder, 1, 0});
  ASSERT_EQ(Layout::check(widest.parts()), LayoutCheck::kOk);
  EXPECT_EQ(layout_end(widest, 0).ends_at_unix_ms, (int64_t{1} << 62) - 1);
  EXPECT_EQ(layout_end(widest, unix_ms_utc(2026, 11, 27)).state, LayoutEndState::kFar);

  // A unit and an epoch that take the field to the end of int64 ms.
  LayoutParts parts{53, 0, 0, 1, kTwitterOrder, 1000, 0};
  parts.epoch_ms = INT64_MAX - (int64_t{1} << 53) * 1000;
  const Layout last(parts);
  ASSERT_EQ(Layout::check(parts), LayoutCheck::kOk);
  const int64_t end = layout_end(last, 0).ends_at_unix_ms;
  EXPECT_EQ(end, INT64_MAX - 1000);
  EXPECT_EQ(layout_end(last, INT64_MAX - 1).state, LayoutEndState::kNear);
  EXPECT_EQ(layout_end(last, INT64_MAX).state, LayoutEndState::kEnded);
  EXPECT_EQ(layout_end(last, INT64_MIN).remaining_ms, INT64_MAX) << "saturated";
  EXPECT_EQ(layout_end(last, INT64_MIN).state, LayoutEndState::kFar);
  EXPECT_EQ(layout_end(widest, INT64_MAX).state, LayoutEndState::kEnded);
  EXPECT_EQ(layout_end(widest, INT64_MIN).remaining_ms, INT64_MAX);
}

// A late epoch: before it, the end is further away than the field's span; a
// layout whose whole span is shorter than a year is near from the start.
TEST(LayoutEnd, EpochsLateAndSpansShort) {
  const int64_t now = unix_ms_utc(2026, 11, 27);
  const Layout late = preset("twitter epoch:1893456000000");  // 2030-01-01
  const LayoutEnd e = layout_end(late, now);
  EXPECT_EQ(e.remaining_ms, late.last_issued_unix_ms() - now);
  EXPECT_GT(e.remaining_ms, late.start_ms(late.max_issued_timestamp()));
  EXPECT_EQ(e.state, LayoutEndState::kFar);

  // 2^34 ms is 199 days: the end is near on the day of the epoch.
  const Layout short_span = preset("time:34 worker:5 sequence:12 epoch:1893456000000");
  EXPECT_EQ(layout_end(short_span, unix_ms_utc(2030, 1, 1)).state, LayoutEndState::kNear);
  EXPECT_EQ(layout_end(short_span, unix_ms_utc(2029, 1, 1)).state, LayoutEndState::kFar);
}

TEST(LayoutEndWarning, DueOnceADayNearTheEnd) {
  const Layout layout;
  const int64_t end = layout.last_issued_unix_ms();
  const int64_t now = end - 100 * kDay;
  EXPECT_TRUE(layout_end_warning_due(layout, now, 0)) << "never warned";
  EXPECT_FALSE(layout_end_warning_due(layout, now, now)) << "just warned";
  EXPECT_FALSE(layout_end_warning_due(layout, now, now - kDay + 1));
  EXPECT_TRUE(layout_end_warning_due(layout, now, now - kDay));
  EXPECT_TRUE(layout_end_warning_due(layout, now, now + kDay)) << "the clock stepped back a day";
  EXPECT_FALSE(layout_end_warning_due(layout, now, now + kDay - 1));
  // After the end too: the log keeps saying so.
  EXPECT_TRUE(layout_end_warning_due(layout, end + kDay, end - 1));
  // Far from the end: never.
  EXPECT_FALSE(layout_end_warning_due(layout, end - kYear - 1, 0));
  EXPECT_FALSE(layout_end_warning_due(layout, unix_ms_utc(2026, 11, 27), 0));
  // Extreme readings do not overflow.
  EXPECT_TRUE(layout_end_warning_due(layout, INT64_MAX, INT64_MIN));
  EXPECT_TRUE(layout_end_warning_due(layout, end, INT64_MAX));
}

}  // namespace
}  // namespace snowflake
