// The check of a node that started without its state file (durable.cpp,
// "Where the bound comes from"), run by the registry worker.
#pragma once

namespace snowflake::pg {

// While the bound is being checked and recovery has ended: asks every
// database whether it has the snowflake extension, and concludes. Returns
// false if it must be tried again later (no background worker slot free).
bool check_bound();

}  // namespace snowflake::pg
