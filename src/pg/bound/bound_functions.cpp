// SQL functions that give a node the bound above its earlier IDs when it
// cannot know it itself (durable.cpp, "Where the bound comes from"): from the
// state file of the data directory it was upgraded or copied from, or as a
// time. Either only ever raises the bound, for good (it goes to WAL, so to
// every standby), so each guards against a mistake it cannot undo. The first
// reads a file of the server's by its path: besides the REVOKE from PUBLIC it
// admits only superusers and members of pg_read_server_files, as pg_read_file
// does. The second refuses a time further ahead of the clock than a node's IDs
// could run, unless the caller says it is meant.
#include <algorithm>
#include <climits>
#include <cstring>

#include "../boundary.hpp"
#include "durable.hpp"
#include "state_file.hpp"
#include "../issue.hpp"
#include "../settings.hpp"
#include "../time.hpp"

extern "C" {
#include "catalog/pg_authid.h"
}

namespace snowflake::pg {
namespace {

// A path longer than PostgreSQL's (MAXPGPATH) would be cut short, naming
// another file, and a name in it longer than the file system's (NAME_MAX)
// cannot be opened: both are refused before any file is opened.
void check_directory_path(const char* directory) {
  static constexpr char kStateFile[] = "/pg_snowflake/state";  // state_file.cpp's kStatePath
  const size_t length = strlen(directory) + strlen(kStateFile);
  size_t longest = 0;
  for (const char* name = directory; *name != '\0';) {
    const size_t name_length = strcspn(name, "/");
    longest = std::max(longest, name_length);
    name += name_length + (name[name_length] == '/' ? 1 : 0);
  }
  if (length < MAXPGPATH && longest <= NAME_MAX) return;
  ereport(ERROR,
          (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
           errmsg("path \"%s%s\" is too long", directory, kStateFile),
           length >= MAXPGPATH
               ? errdetail("It has %zu bytes; a path may have at most %d.", length, MAXPGPATH - 1)
               : errdetail("A name in it has %zu bytes; a file system allows at most %d.", longest,
                           NAME_MAX),
           errhint("Name the data directory by a shorter path, such as a symbolic link to it.")));
}

// How far beyond snowflake.max_lead a bound may lie ahead of the clock without
// allow_far_future. An operator passes the time of the last ID the old node
// issued: ahead of that node's clock by at most its max_lead (the same
// setting, on a node that replaces it), and of this node's clock by the
// clocks' difference too, well under a second under NTP. A minute covers
// that and a clock a little off; a mistyped year, month, day or hour is
// refused.
constexpr int64_t kBoundClockMarginMs = 60 * 1000;

// Whoever may read the server's files by their path may read a state file.
void require_file_reader() {
  if (has_privs_of_role(GetUserId(), ROLE_PG_READ_SERVER_FILES)) return;
  ereport(ERROR,
          (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
           errmsg("permission denied to read snowflake state files"),
           errdetail("snowflake_restore_bound reads a file of the server's by its path, which "
                     "only superusers and members of pg_read_server_files may do."),
           errhint("Run it as a superuser, or GRANT pg_read_server_files to the role.")));
}

// A bound further ahead of the clock than max_lead and the margin is refused
// unless `allow_far_future`: it would stop the node until the clock reaches it.
void check_bound_lead(TimestampTz ts, int64_t unix_ms, bool allow_far_future, bool has_argument) {
  const TimestampTz now = GetCurrentTimestamp();
  const int64_t lead = unix_ms - unix_ms_from_timestamptz(now);
  const int64_t limit = settings.max_lead_ms + kBoundClockMarginMs;
  if (allow_far_future || lead <= limit) return;
  const char* text = timestamp_text(ts);
  ereport(ERROR,
          (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
           errmsg("snowflake bound %s is %lld ms ahead of the clock", text,
                  static_cast<long long>(lead)),
           errdetail("The clock reads %s; a bound may lie at most %lld ms ahead of it: "
                     "snowflake.max_lead (%d ms) plus %lld ms for two nodes' clocks to differ. "
                     "A bound is never lowered: the node would issue no ID until its clock "
                     "reaches it.",
                     timestamp_text(now), static_cast<long long>(limit), settings.max_lead_ms,
                     static_cast<long long>(kBoundClockMarginMs)),
           errhint("Check the date. If IDs were really issued up to then, %sSELECT "
                   "snowflake_set_bound('%s', allow_far_future => true).",
                   has_argument ? "" : "run ALTER EXTENSION snowflake UPDATE, then ", text)));
}

Datum bound_result(int64_t until) {
  return TimestampTzGetDatum(timestamptz_from_unix_ms(settings.layout.unix_ms(until)));
}

}  // namespace
}  // namespace snowflake::pg

using namespace snowflake::pg;

// snowflake_restore_bound(data_directory): the bound in that directory's
// pg_snowflake/state. IDs compare as numbers whatever the layout, so a file
// written under another layout or epoch gives a true bound too.
SNOWFLAKE_FUNCTION(snowflake_restore_bound) {
  require_file_reader();
  require_issuing_server();
  const char* directory = text_to_cstring(PG_GETARG_TEXT_PP(0));
  check_directory_path(directory);
  const uint64_t id_bound = read_other_state_file(directory);
  PG_RETURN_DATUM(bound_result(adopt_bound(settings.layout.timestamp_bound(id_bound))));
}

// snowflake_set_bound(issued_up_to, allow_far_future): every ID issued before is of
// `issued_up_to` or earlier, so the next one is of a later unit of the
// layout's time (a millisecond by default). A time the node's IDs cannot hold
// is an error naming the range: before the epoch no ID was issued (a typo in
// a year would otherwise end the refusal of a node whose bound is unknown),
// and from the last unit the node issues in no ID would remain, for good. A
// time in range but far ahead of the clock needs allow_far_future (1.7; a
// database still at 1.4-1.6 calls it with the time alone).
SNOWFLAKE_FUNCTION(snowflake_set_bound) {
  require_issuing_server();
  const TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
  const snowflake::Layout& layout = settings.layout;
  const bool finite = !TIMESTAMP_NOT_FINITE(ts);
  const int64_t unix_ms = finite ? unix_ms_from_timestamptz(ts) : 0;
  // The unit of the layout's time that holds `ts` (-1: before the epoch).
  const int64_t timestamp =
      finite && unix_ms >= layout.epoch_ms() ? layout.timestamp_at_unix_ms(unix_ms) : -1;
  if (timestamp < 0 || timestamp >= layout.max_issued_timestamp()) {
    const bool early = finite ? timestamp < 0 : TIMESTAMP_IS_NOBEGIN(ts);
    ereport(ERROR,
            (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
             errmsg("snowflake bound %s is %s", timestamp_text(ts),
                    early ? "before the epoch of the node's IDs"
                          : "not before the last time the node's IDs hold"),
             errdetail("This node issues IDs of times from %s (snowflake.epoch) to %s; a bound "
                       "must lie in that range, before its end.",
                       unix_ms_text(layout.epoch_ms()), unix_ms_text(layout.last_issued_unix_ms())),
             errhint(early ? "Pass the time of the last ID the node may have issued; if it never "
                             "issued one, now()."
                           : "Pass the time of the last ID the node may have issued, or now().")));
  }
  const bool has_argument = PG_NARGS() > 1;
  check_bound_lead(ts, unix_ms, has_argument && PG_GETARG_BOOL(1), has_argument);
  PG_RETURN_DATUM(bound_result(adopt_bound(timestamp + 1)));
}
