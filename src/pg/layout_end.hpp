// The server log's warnings about the layout's end (issue 39, item 8; the
// arithmetic is src/core/layout_end.hpp): one at server start, given by the
// postmaster, and then one a day from the registry worker's loop, which every
// server that preloads the library runs. The time of the last warning lives
// in shared memory (SharedNode::layout_end_warned_at), so a worker that
// restarts does not warn again, and neither does any backend.
#pragma once

#include <cstdint>

namespace snowflake::pg {

// While the server starts (_PG_init, preload only): a clock outside the
// layout's range (before its epoch, or past its end) or within a year of the
// end is logged as a WARNING.
void warn_of_layout_end_at_start();

// The postmaster, when it sets up shared memory: the time of the warning at
// start, if one was given (ms since 1970), else 0.
int64_t layout_end_warned_at_start();

// The registry worker, at every round: the day's warning if it is due.
// Returns how long it may wait before it looks again (ms).
long warn_of_layout_end_daily();

}  // namespace snowflake::pg
