// The hooks of snowflake.public_id_keys_file, the file of the keys of public
// IDs (public_id.cpp states who reads it, how the keys reach the other
// processes and parallel workers, and how they are kept); settings.cpp
// defines the setting with them, module.cpp asks for the shared memory.
#pragma once

#include "postgres.hpp"

namespace snowflake::pg {

bool check_public_id_keys_file(char** newval, void** extra, GucSource source);
void assign_public_id_keys_file(const char* newval, void* extra);

// While the server starts (preload): a keys file that cannot be loaded stops
// it, as a bad ssl_key_file does.
void require_public_id_keys_at_start();

// With the preload: the shared memory of the published keys and of each
// session's statement keys, and the ExecutorStart hook that records them.
void request_public_id_memory();

}  // namespace snowflake::pg
