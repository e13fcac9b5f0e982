// What the module sets up for the SQL functions that issue IDs
// (issue_functions.cpp).
#pragma once

namespace snowflake::pg {

// Makes DISCARD SEQUENCES and DISCARD ALL forget snowflake_lastval(), as they
// forget lastval(), and tells durable.cpp of CREATE EXTENSION snowflake.
// Called from _PG_init, in every process that loads the library.
void install_utility_hook();

}  // namespace snowflake::pg
