// The server log's warnings about the layout's range (layout_end.hpp).
//
// At start the postmaster warns of a clock before the layout's epoch or past
// its end (the server still starts: settings_layout.cpp says why), and of an
// end within a year. Then the registry worker looks at every round (at least
// hourly) and warns once a day while the end is within a year or past: Baidu's
// uid-generator ran out on 2024-11-20 and stopped production without a word
// beforehand. One process writes the time of the last warning after start
// (the worker; the postmaster before it), so no lock is needed.
#include "layout_end.hpp"

#include "../core/clock.hpp"
#include "../core/layout_end.hpp"
#include "../core/layout_text.hpp"
#include "node_memory.hpp"
#include "postgres.hpp"
#include "settings.hpp"
#include "time.hpp"

namespace snowflake::pg {
namespace {

// The worker looks at least this often: a node that runs for a year enters
// its last one without a restart, and a clock may jump.
constexpr long kLookEveryMs = 60L * 60 * 1000;

int64_t warned_at_start = 0;

// The clock reads `now`, before the layout's epoch or past its end.
void warn_of_clock_outside(int64_t now, bool early) {
  const Layout& layout = settings.layout;
  char canonical[kLayoutTextSize];
  describe_layout(layout.parts(), canonical, sizeof(canonical));
  ereport(WARNING,
          (errmsg("the system clock reads %s, %s the range of the snowflake ID layout",
                  unix_ms_text(now), early ? "before" : "after"),
           errdetail("The ID layout (%s) issues IDs of times from %s to %s. snowflake_nextval() "
                     "refuses to issue IDs until the clock reads a time in that range; "
                     "everything else works.",
                     canonical, unix_ms_text(layout.epoch_ms()),
                     unix_ms_text(layout.last_issued_unix_ms())),
           early ? errhint("Set the system clock right (NTP). If it is right, the layout's epoch "
                           "is later than now: choose the epoch before the first ID is issued.")
                 : errhint("Set the system clock right (NTP). If it is right, the layout's time "
                           "has run out: issue new IDs in a layout with a later epoch or a wider "
                           "time field (doc/layouts.md, \"When the layout runs out\").")));
}

// The layout's end is within a year of `now`.
void warn_of_end_near(const LayoutEnd& end) {
  char canonical[kLayoutTextSize];
  describe_layout(settings.layout.parts(), canonical, sizeof(canonical));
  const unsigned long days = static_cast<unsigned long>(end.remaining_ms / kMsPerDay);
  ereport(
      WARNING,
      (errmsg("the snowflake ID layout runs out on %s", unix_ms_text(end.ends_at_unix_ms)),
       errdetail_plural("The ID layout (%s) holds times up to %s, %lu day from now; after that "
                        "snowflake_nextval() refuses to issue IDs (SQLSTATE 2200H). This warning "
                        "repeats once a day.",
                        "The ID layout (%s) holds times up to %s, %lu days from now; after that "
                        "snowflake_nextval() refuses to issue IDs (SQLSTATE 2200H). This warning "
                        "repeats once a day.",
                        days, canonical, unix_ms_text(end.ends_at_unix_ms), days),
       errhint("Before then, choose a layout with a later epoch or a wider time field for "
               "the IDs issued from then on, kept apart from the IDs issued so far "
               "(doc/layouts.md, \"When the layout runs out\").")));
}

// Warns as the state of the layout's end at `now` says; whether it did.
bool warn_of_layout_end(int64_t now, bool at_start) {
  const LayoutEnd end = layout_end(settings.layout, now);
  if (at_start && now < settings.layout.epoch_ms()) {
    warn_of_clock_outside(now, true);
    return true;
  }
  switch (end.state) {
    case LayoutEndState::kFar:
      return false;
    case LayoutEndState::kNear:
      warn_of_end_near(end);
      return true;
    case LayoutEndState::kEnded:
      warn_of_clock_outside(now, false);
      return true;
  }
  return false;
}

}  // namespace

void warn_of_layout_end_at_start() {
  const int64_t now = unix_time_ms();
  if (warn_of_layout_end(now, true)) warned_at_start = now;
}

int64_t layout_end_warned_at_start() {
  return warned_at_start;
}

long warn_of_layout_end_daily() {
  if (shared_node == nullptr) return kLookEveryMs;
  const int64_t now = unix_time_ms();
  const auto last = static_cast<int64_t>(pg_atomic_read_u64(&shared_node->layout_end_warned_at));
  if (layout_end_warning_due(settings.layout, now, last) && warn_of_layout_end(now, false))
    pg_atomic_write_u64(&shared_node->layout_end_warned_at, static_cast<uint64>(now));
  return kLookEveryMs;
}

}  // namespace snowflake::pg
