// What differs between the PostgreSQL majors snowflake builds for (15, 17, 18
// and 19; README, "Supported PostgreSQL"), in one place, so the glue reads the
// same on every major and no other file tests PG_VERSION_NUM.
//
// What did not need an entry, checked on each major: the custom WAL resource
// manager (RegisterCustomRmgr, RmgrData: 15+), shmem_request_hook (15+), the
// background worker API, WaitLatch with PG_WAIT_EXTENSION, and libpq. The
// replication origin of the bound (bound/bound_register.cpp) calls
// replorigin_by_name, replorigin_create, replorigin_advance and
// replorigin_get_progress, whose signatures are those of 15 on 16, 17, 18 and
// 19 (19~rc1's headers: only the id's type is renamed, below), LockRelationOid
// and LockAcquire on pg_replication_origin and on the origin (a drop locks the
// table up to 15, the origin from 16), and reads pg_logical/
// replorigin_checkpoint as 15 to 17 write it (magic, 16-byte entries, CRC-32C;
// 18 and 19 unverified: the reader checks magic, size and CRC and otherwise
// reads nothing). What differs is below: the setting that counts origin states,
// and the id's type. On 19 in particular: its new shared memory registration
// (RegisterShmemCallbacks, ShmemRequestStruct) keeps shmem_request_hook,
// RequestAddinShmemSpace and ShmemInitStruct working as before; its
// BGWORKER_INTERRUPTIBLE concerns workers connected to a database, and the
// registry worker connects to none; the module magic, the interrupt flags
// (ConfigReloadPending, ShutdownRequestPending) and DefineCustom*Variable are
// unchanged. One 19 change needs no code here but matters: promotion waits for
// every process to absorb a ProcSignalBarrier
// (PROCSIGNAL_BARRIER_UPDATE_XLOG_LOGICAL_INFO), so a registry worker that did
// not serve its interrupts after each wait (registry/worker.cpp) would hold
// every failover up forever.
#pragma once

#include "postgres.hpp"

extern "C" {
#include "replication/origin.h"
#include "replication/slot.h"
#include "utils/guc_tables.h"
}

#if PG_VERSION_NUM < 150000
#error "snowflake needs PostgreSQL 15 or later (custom WAL resource managers, shmem_request_hook)"
#endif

// A replication origin's id: 19 renamed its type and invalid value
// (RepOriginId, InvalidRepOriginId before); the glue uses 19's names.
#if PG_VERSION_NUM < 190000
typedef RepOriginId ReplOriginId;
#define InvalidReplOriginId InvalidRepOriginId
#endif

// The module's magic block. 18 and later record the module's name and
// version, which pg_get_loaded_modules() shows; SNOWFLAKE_VERSION comes from
// the Makefile (default_version in snowflake.control).
#if PG_VERSION_NUM >= 180000
#define SNOWFLAKE_MODULE_MAGIC \
  PG_MODULE_MAGIC_EXT(.name = "snowflake", .version = SNOWFLAKE_VERSION)
#else
#define SNOWFLAKE_MODULE_MAGIC PG_MODULE_MAGIC
#endif

namespace snowflake::pg::compat {

// This backend's index in the PGPROC array, stable for its lifetime, for
// arrays in shared memory with one slot per backend. Call only with MyProc
// set. 17 replaced PGPROC.pgprocno with the global MyProcNumber.
inline int my_proc_number() {
#if PG_VERSION_NUM >= 170000
  return MyProcNumber;
#else
  return MyProc->pgprocno;
#endif
}

// The index in the PGPROC array of another process's PGPROC (a parallel
// worker's leader). 17 replaced PGPROC.pgprocno with GetNumberFromPGProc().
inline int proc_number_of(const PGPROC* proc) {
#if PG_VERSION_NUM >= 170000
  return GetNumberFromPGProc(proc);
#else
  return proc->pgprocno;
#endif
}

// Whether the checkpointer has taken up a non-empty synchronous_standby_names
// (so commits wait for standbys). Minor releases since 2025 keep this as a
// flag in sync_standbys_status; earlier ones as the bool
// sync_standbys_defined. The caller holds SyncRepLock.
inline bool sync_standbys_defined(const WalSndCtlData* control) {
#ifdef SYNC_STANDBY_DEFINED
  return (control->sync_standbys_status & SYNC_STANDBY_DEFINED) != 0;
#else
  return control->sync_standbys_defined;
#endif
}

// The reset value of a placeholder's GUC record (a placeholder is a string
// setting). 19 keeps each type's fields in a union inside config_generic;
// before, config_string began with config_generic.
inline const char* placeholder_reset_value(const config_generic* record) {
#if PG_VERSION_NUM >= 190000
  return record->_string.reset_val;
#else
  return reinterpret_cast<const config_string*>(record)->reset_val;
#endif
}

// The GUC record named `name`, a defined setting or a placeholder, or nullptr.
// 16 made get_guc_variables() return the count too.
inline config_generic* find_setting_record(const char* name) {
#if PG_VERSION_NUM >= 160000
  int count = 0;
  config_generic** records = get_guc_variables(&count);
#else
  config_generic** records = get_guc_variables();
  const int count = GetNumConfigOptions();
#endif
  for (int i = 0; i < count; ++i)
    if (pg_strcasecmp(records[i]->name, name) == 0) return records[i];
  return nullptr;
}

// Memory for a GUC check hook's `extra`, which PostgreSQL frees when it drops
// the value: with free() up to 15, with guc_free() from 16 on, which frees
// only what guc_malloc() allocated (in the GUC memory context; anything else
// ends the process: "pfree called with invalid pointer"). nullptr when out
// of memory (logged from 16 on).
inline void* guc_extra_alloc(size_t size) {
#if PG_VERSION_NUM >= 160000
  return guc_malloc(LOG, size);
#else
  return malloc(size);
#endif
}

// Frees what guc_extra_alloc() returned, for a value the hook then refuses
// (PostgreSQL frees only the `extra` of values it accepts).
inline void guc_extra_free(void* extra) {
#if PG_VERSION_NUM >= 160000
  guc_free(extra);
#else
  free(extra);
#endif
}

// How many replication origins may have a replication state at once (the
// bound's origin takes one: bound/bound_register.cpp), and the setting that
// says it. 18 sized them by max_active_replication_origins; before, by
// max_replication_slots.
#if PG_VERSION_NUM >= 180000
inline int replication_origin_states() {
  return max_active_replication_origins;
}
inline constexpr char kReplicationOriginStatesSetting[] = "max_active_replication_origins";
#else
inline int replication_origin_states() {
  return max_replication_slots;
}
inline constexpr char kReplicationOriginStatesSetting[] = "max_replication_slots";
#endif

// Serves the startup process's interrupts (a shutdown, a reload) during a
// wait in redo. 18 renamed HandleStartupProcInterrupts.
inline void process_startup_interrupts() {
#if PG_VERSION_NUM >= 180000
  ProcessStartupProcInterrupts();
#else
  HandleStartupProcInterrupts();
#endif
}

}  // namespace snowflake::pg::compat
