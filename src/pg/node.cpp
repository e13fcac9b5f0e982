// The node's generator in shared memory.
//
// Shared memory holds two structs (node_memory.hpp). "snowflake generator" is
// the generator's state (one cache line of atomics, see
// src/core/generator.hpp) plus the durable bound's bookkeeping (durable.cpp)
// and the counters of exited backends (counters.cpp); "snowflake backends" is
// one slot of counters per backend. Both are set up here, in the postmaster,
// which also restores the durable bound before any backend starts.
#include "node.hpp"

#include <new>

#include "layout_end.hpp"
#include "node_memory.hpp"
#include "postgres.hpp"
#include "settings.hpp"

namespace snowflake::pg {

SharedNode* shared_node = nullptr;
BackendSlot* backend_slots = nullptr;

namespace {

shmem_request_hook_type previous_request_hook = nullptr;
shmem_startup_hook_type previous_startup_hook = nullptr;

// Built in place when shared memory is attached (no allocation; Generator is
// trivially destructible).
alignas(Generator) unsigned char generator_storage[sizeof(Generator)];
Generator* generator = nullptr;

Size shared_size() {
  return MAXALIGN(sizeof(SharedNode));
}
Size slots_size() {
  return mul_size(backend_slot_count(), sizeof(BackendSlot));
}

void request_hook() {
  if (previous_request_hook) previous_request_hook();
  RequestAddinShmemSpace(add_size(shared_size(), slots_size()));
  RequestNamedLWLockTranche("snowflake", 2);
}

void startup_hook() {
  if (previous_startup_hook) previous_startup_hook();

  LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
  bool found_node = false;
  bool found_slots = false;
  shared_node =
      static_cast<SharedNode*>(ShmemInitStruct("snowflake generator", shared_size(), &found_node));
  backend_slots =
      static_cast<BackendSlot*>(ShmemInitStruct("snowflake backends", slots_size(), &found_slots));
  if (!found_node) {
    memset(static_cast<void*>(shared_node), 0, sizeof(SharedNode));
    new (&shared_node->generator) GeneratorState();
    LWLockPadded* locks = GetNamedLWLockTranche("snowflake");
    shared_node->durable_lock = &locks[0].lock;
    shared_node->counters_lock = &locks[1].lock;
    pg_atomic_init_u32(&shared_node->bound_state, 0);
    pg_atomic_init_u64(&shared_node->bound_check.answer, 0);
    pg_atomic_init_u32(&shared_node->bound_check.progress, 0);
    pg_atomic_init_u64(&shared_node->layout_end_warned_at,
                       static_cast<uint64>(layout_end_warned_at_start()));
  }
  if (!found_slots) {
    for (int i = 0; i < backend_slot_count(); i++) {
      backend_slots[i].pid = 0;
      for (auto& value : backend_slots[i].value) pg_atomic_init_u64(&value, 0);
    }
  }
  LWLockRelease(AddinShmemInitLock);

  generator = new (generator_storage) Generator(shared_node->generator, settings.layout);

  // Only the postmaster reads the state file: at start, and again when it
  // reinitializes shared memory after a backend crashed.
  if (!IsUnderPostmaster) restore_durable_bound();
}

}  // namespace

void request_node_memory() {
  previous_request_hook = shmem_request_hook;
  shmem_request_hook = request_hook;
  previous_startup_hook = shmem_startup_hook;
  shmem_startup_hook = startup_hook;
}

Generator* node_generator() {
  return generator;
}

}  // namespace snowflake::pg
