// The keys of public IDs in every process: the hooks of
// snowflake.public_id_keys_file (settings.cpp defines the setting with them),
// their shared memory (module.cpp asks for it), and the keys a call uses
// (public_id.cpp). public_id_keys.cpp states who reads the file, how the keys
// reach the other processes and parallel workers, and how they are kept.
#pragma once

#include "../core/public_id.hpp"
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

// The keys a call of snowflake_to_public() or snowflake_from_public() uses:
// in a parallel worker, its leader's for the statement (an error if they are
// no longer kept); empty if none is configured.
const public_id::KeyRing& public_id_keys_for_call();

}  // namespace snowflake::pg
