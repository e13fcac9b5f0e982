// Helpers shared by the core's unit tests: readable printing of the core's
// enums and structs in GoogleTest failure messages, calendar arithmetic for
// checking dates without the C library's time zone machinery, and a few
// builders.
#pragma once

#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>

#include "generator.hpp"
#include "layout.hpp"

namespace snowflake {

// GoogleTest finds these by argument-dependent lookup, so EXPECT_EQ on a Step
// prints "kWaitForClock" rather than a byte value.
inline const char* step_name(Step step) {
  switch (step) {
    case Step::kIssued:
      return "kIssued";
    case Step::kWaitForSequence:
      return "kWaitForSequence";
    case Step::kWaitForClock:
      return "kWaitForClock";
    case Step::kClockBehind:
      return "kClockBehind";
    case Step::kNeedDurable:
      return "kNeedDurable";
    case Step::kClockBeforeEpoch:
      return "kClockBeforeEpoch";
    case Step::kTimestampExhausted:
      return "kTimestampExhausted";
    default:
      return "Step(unknown)";
  }
}

inline void PrintTo(Step step, std::ostream* os) {
  *os << step_name(step);
}

inline void PrintTo(LayoutCheck check, std::ostream* os) {
  switch (check) {
    case LayoutCheck::kOk:
      *os << "kOk";
      return;
    case LayoutCheck::kTooWide:
      *os << "kTooWide";
      return;
    case LayoutCheck::kTimestampOutOfRange:
      *os << "kTimestampOutOfRange";
      return;
    case LayoutCheck::kDatacenterOutOfRange:
      *os << "kDatacenterOutOfRange";
      return;
    case LayoutCheck::kWorkerOutOfRange:
      *os << "kWorkerOutOfRange";
      return;
    case LayoutCheck::kSequenceOutOfRange:
      *os << "kSequenceOutOfRange";
      return;
    case LayoutCheck::kUnitOutOfRange:
      *os << "kUnitOutOfRange";
      return;
    case LayoutCheck::kEpochOutOfRange:
      *os << "kEpochOutOfRange";
      return;
    case LayoutCheck::kTimeTooLong:
      *os << "kTimeTooLong";
      return;
    case LayoutCheck::kOrderInvalid:
      *os << "kOrderInvalid";
      return;
    default:
      *os << "LayoutCheck(" << static_cast<int>(check) << ")";
  }
}

inline void PrintTo(FieldCheck check, std::ostream* os) {
  switch (check) {
    case FieldCheck::kOk:
      *os << "kOk";
      return;
    case FieldCheck::kTimestamp:
      *os << "kTimestamp";
      return;
    case FieldCheck::kDatacenter:
      *os << "kDatacenter";
      return;
    case FieldCheck::kWorker:
      *os << "kWorker";
      return;
    case FieldCheck::kSequence:
      *os << "kSequence";
      return;
    default:
      *os << "FieldCheck(" << static_cast<int>(check) << ")";
  }
}

inline void PrintTo(const Fields& f, std::ostream* os) {
  *os << "{timestamp=" << f.timestamp << " datacenter_id=" << f.datacenter_id
      << " worker_id=" << f.worker_id << " sequence=" << f.sequence << "}";
}

inline void PrintTo(const Outcome& o, std::ostream* os) {
  *os << "{step=" << step_name(o.step) << " first_id=" << o.first_id << " count=" << o.count
      << " timestamp=" << o.timestamp << " wait_until=" << o.wait_until
      << " last_timestamp=" << o.last_timestamp << " clock=" << o.clock
      << " refresh_durable=" << o.refresh_durable << " clock_step_ms=" << o.clock_step_ms
      << " clock_high_water=" << o.clock_high_water << " first_to_see_step=" << o.first_to_see_step
      << "}";
}

namespace unit_test {

template <typename T>
std::string show(const T& value) {
  std::ostringstream out;
  PrintTo(value, &out);
  return out.str();
}

// "id 123 = {timestamp=.. node=.. sequence=..}" for failure messages.
inline std::string show_id(const Layout& layout, int64_t id) {
  std::ostringstream out;
  out << "id " << id << " = {timestamp=" << layout.timestamp_of(id)
      << " node=" << layout.node_of(id) << " sequence=" << layout.sequence_of(id) << "}";
  return out.str();
}

inline bool same_fields(const Fields& a, const Fields& b) {
  return a.timestamp == b.timestamp && a.datacenter_id == b.datacenter_id &&
         a.worker_id == b.worker_id && a.sequence == b.sequence;
}

inline Policy make_policy(int64_t max_lead_ms, int64_t clock_wait_budget_ms) {
  Policy policy;
  policy.max_lead_ms = max_lead_ms;
  policy.clock_wait_budget_ms = clock_wait_budget_ms;
  return policy;
}

// Days from 1970-01-01 to the given proleptic Gregorian date (Howard
// Hinnant's days_from_civil).
constexpr int64_t days_from_civil(int64_t year, int64_t month, int64_t day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t year_of_era = year - era * 400;
  const int64_t day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

// Milliseconds since the Unix epoch of a UTC date and time.
constexpr int64_t unix_ms_utc(int64_t year, int64_t month, int64_t day, int64_t hour = 0,
                              int64_t minute = 0, int64_t second = 0, int64_t millisecond = 0) {
  return ((days_from_civil(year, month, day) * 24 + hour) * 60 + minute) * 60000 + second * 1000 +
         millisecond;
}

static_assert(unix_ms_utc(1970, 1, 1) == 0, "days_from_civil is off");
static_assert(unix_ms_utc(2000, 3, 1) == 951868800000, "days_from_civil is off");

}  // namespace unit_test
}  // namespace snowflake
