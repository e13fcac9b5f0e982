// The library file this code was loaded from, for the background workers
// snowflake starts: each worker loads the library named in its registration.
#pragma once

#include <cstddef>

namespace snowflake::pg {

// Writes into out (size bytes, a worker registration's bgw_library_name) the
// path the postmaster loaded snowflake from (dladdr), or "snowflake" where
// that path does not fit. shared_preload_libraries may name the library by
// path: "snowflake", looked up through dynamic_library_path, would then find
// another file (or none), whose _PG_init defines the settings a second time
// ("attempt to redefine parameter"), and the worker would never run.
void worker_library_name(char* out, size_t size);

}  // namespace snowflake::pg
