// The hooks of snowflake.public_id_keys_file, the file of the keys of public
// IDs (public_id.cpp states how the keys are read and kept); settings.cpp
// defines the setting with them.
#pragma once

#include "postgres.hpp"

namespace snowflake::pg {

bool check_public_id_keys_file(char** newval, void** extra, GucSource source);
void assign_public_id_keys_file(const char* newval, void* extra);

// While the server starts (preload): a keys file that cannot be loaded stops
// it, as a bad ssl_key_file does.
void require_public_id_keys_at_start();

}  // namespace snowflake::pg
