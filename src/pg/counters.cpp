// The per-backend counters behind snowflake_status and
// snowflake_backend_status. Each backend counts in its own variables and
// publishes each change to its slot in "snowflake backends" (claimed at first
// use, by its proc number), which only it writes: counting costs no
// contention, and no lock. A backend that exits adds its slot to the node's
// retired sums under counters_lock, which readers of the totals take too.
#include "counters.hpp"

#include <algorithm>

#include "compat.hpp"
#include "node_memory.hpp"
#include "postgres.hpp"

namespace snowflake::pg {

namespace {

// This backend's counters, its slot (claimed at first use) and a stand-in for
// processes without one.
Counters local;
BackendSlot* my_slot = nullptr;
BackendSlot unshared_slot;

// Counters add up across backends, but for the largest step, which is a maximum.
int64_t combine(int counter, int64_t total, int64_t value) {
  return counter == kLargestClockStepMs ? std::max(total, value) : total + value;
}

BackendSlot* claim_slot() {
  if (MyProc == nullptr || compat::my_proc_number() >= backend_slot_count()) return &unshared_slot;
  BackendSlot* slot = &backend_slots[compat::my_proc_number()];
  slot->pid = MyProcPid;
  before_shmem_exit(
      [](int, Datum) {
        LWLockAcquire(shared_node->counters_lock, LW_EXCLUSIVE);
        for (int i = 0; i < kCounterCount; i++) {
          const auto value = static_cast<int64_t>(pg_atomic_read_u64(&my_slot->value[i]));
          shared_node->retired[i] = combine(i, shared_node->retired[i], value);
          pg_atomic_write_u64(&my_slot->value[i], 0);
        }
        my_slot->pid = 0;
        LWLockRelease(shared_node->counters_lock);
      },
      0);
  return slot;
}

void publish(Counter counter) {
  if (unlikely(my_slot == nullptr)) my_slot = claim_slot();
  pg_atomic_write_u64(&my_slot->value[counter], static_cast<uint64>(local.value[counter]));
}

}  // namespace

void count(Counter counter, int64_t amount) {
  local.value[counter] += amount;
  publish(counter);
}

void count_largest(Counter counter, int64_t value) {
  if (value <= local.value[counter]) return;
  local.value[counter] = value;
  publish(counter);
}

Counters node_counters() {
  Counters total;
  LWLockAcquire(shared_node->counters_lock, LW_SHARED);
  for (int i = 0; i < kCounterCount; i++) total.value[i] = shared_node->retired[i];
  for (int s = 0; s < backend_slot_count(); s++) {
    for (int i = 0; i < kCounterCount; i++) {
      const auto value = static_cast<int64_t>(pg_atomic_read_u64(&backend_slots[s].value[i]));
      total.value[i] = combine(i, total.value[i], value);
    }
  }
  LWLockRelease(shared_node->counters_lock);
  return total;
}

void visit_backends(void (*visit)(int pid, const Counters& counters, void* context),
                    void* context) {
  for (int s = 0; s < backend_slot_count(); s++) {
    const int pid = backend_slots[s].pid;
    if (pid == 0) continue;
    Counters counters;
    for (int i = 0; i < kCounterCount; i++)
      counters.value[i] = static_cast<int64_t>(pg_atomic_read_u64(&backend_slots[s].value[i]));
    visit(pid, counters, context);
  }
}

}  // namespace snowflake::pg
