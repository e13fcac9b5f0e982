// The module: its magic block and _PG_init. Loaded through
// shared_preload_libraries, it sets up the node's generator in shared memory
// and its WAL resource manager; loaded later (CREATE EXTENSION without the
// preload) it only defines the settings and the session's hooks, so
// decoding works and issuing IDs fails with an error that says what to add
// to postgresql.conf.
#include <dlfcn.h>

#include <cstring>

#include "bound/bound_wal.hpp"
#include "bound/carrier.hpp"
#include "compat.hpp"
#include "bound/durable.hpp"
#include "issue_functions.hpp"
#include "library.hpp"
#include "node.hpp"
#include "postgres.hpp"
#include "public_id_keys.hpp"
#include "registry/registry.hpp"
#include "settings.hpp"

extern "C" {

SNOWFLAKE_MODULE_MAGIC;

void _PG_init(void) {
  snowflake::pg::define_settings();
  snowflake::pg::install_utility_hook();
  snowflake::pg::install_bound_origin_hooks();
  snowflake::pg::install_carrier_callbacks();
  if (!process_shared_preload_libraries_in_progress) return;
  snowflake::pg::register_wal_resource_manager();
  snowflake::pg::request_node_memory();
  snowflake::pg::request_registry_memory();
  snowflake::pg::request_public_id_memory();
  // pg_upgrade starts servers in binary-upgrade mode only to dump or restore
  // their schemas; the registry has nothing to do there.
  if (!IsBinaryUpgrade) snowflake::pg::register_registry_worker();
}

}  // extern "C"

namespace snowflake::pg {

void worker_library_name(char* out, size_t size) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&worker_library_name), &info) != 0 &&
      info.dli_fname != nullptr && strlen(info.dli_fname) < size)
    strlcpy(out, info.dli_fname, size);
  else
    strlcpy(out, "snowflake", size);
}

}  // namespace snowflake::pg
