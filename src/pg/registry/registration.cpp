// The registry worker's registration with the postmaster (_PG_init, module.cpp),
// and whether it was taken. The worker itself is worker.cpp.
#include "../bound/bound_check.hpp"
#include "../library.hpp"
#include "registry.hpp"
#include "view.hpp"

extern "C" {
#include "postmaster/bgworker.h"
#include "postmaster/bgworker_internals.h"
}

namespace snowflake::pg {

namespace {

// Whether the postmaster took the worker's registration (copied into every
// process it starts).
bool registered_worker = false;

}  // namespace

void register_registry_worker() {
  BackgroundWorker registration;
  memset(&registration, 0, sizeof(registration));
  registration.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
  // Also on a standby, where it waits for the promotion.
  registration.bgw_start_time = BgWorkerStart_ConsistentState;
  registration.bgw_restart_time = kRegistryRestartSeconds;
  worker_library_name(registration.bgw_library_name, sizeof(registration.bgw_library_name));
  strlcpy(registration.bgw_function_name, "snowflake_registry_main", BGW_MAXLEN);
  strlcpy(registration.bgw_name, registry::kWorkerName, BGW_MAXLEN);
  strlcpy(registration.bgw_type, registry::kWorkerName, BGW_MAXLEN);
  RegisterBackgroundWorker(&registration);
  // RegisterBackgroundWorker() only logs when max_worker_processes is used up.
  // The postmaster's list is an slist before PostgreSQL 17 and a circular
  // dlist after; this loop walks either (the lists' macros are not C++).
  for (auto* link = BackgroundWorkerList.head.next;
       link != nullptr && link != &BackgroundWorkerList.head; link = link->next) {
    const auto* registered = reinterpret_cast<const RegisteredBgWorker*>(
        reinterpret_cast<const char*>(link) - offsetof(RegisteredBgWorker, rw_lnode));
    if (strcmp(registered->rw_worker.bgw_function_name, "snowflake_registry_main") == 0 &&
        strcmp(registered->rw_worker.bgw_library_name, registration.bgw_library_name) == 0)
      registered_worker = true;
  }
}

bool registry_worker_registered() {
  return registered_worker;
}

}  // namespace snowflake::pg
