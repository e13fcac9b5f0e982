// The file of the keys of public IDs, which snowflake.public_id_keys_file
// names, read into a key set: checked before it is opened, opened without
// blocking, checked again once open (public_id_key_file.cpp says why a file
// and what is checked; public_id_keys.cpp, who reads it and when).
#pragma once

#include "../core/public_id.hpp"
#include "../core/published_keys.hpp"

namespace snowflake::pg {

// Why a file could not be loaded, for a message: names a line, never its text.
struct LoadProblem {
  char detail[256];
  const char* hint;
};

// Reads the file at `path` into `set`: checked before it is opened, opened
// without blocking, checked again once open. No PostgreSQL call (the
// postmaster runs it in a check hook): plain POSIX, and the text wiped before
// it is freed.
bool read_key_file(const char* path, public_id::KeySet* set, LoadProblem* problem);

}  // namespace snowflake::pg
