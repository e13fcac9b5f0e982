// The keys of public IDs in every process (public_id_keys.hpp): the hooks of
// snowflake.public_id_keys_file, their shared memory, and the keys of a
// statement's parallel workers.
//
// Who reads the file, and when: one process takes keys from it, the
// postmaster, at server start and at every reload (the setting's check hook,
// before it signals the other processes to reload); another process only
// checks the file of a value the server did not load (below), as
// public_id_key_file.cpp reads it. A file that cannot be loaded is refused as
// any invalid setting is: at a reload the keys loaded before stay, and the
// postmaster's log line says which line is at fault and why, never what the
// line holds; at server start it stops the server, as a bad ssl_key_file
// does. Without the preload there is no postmaster of ours: each session that
// loads the library reads the file itself, when it loads it and at each
// reload.
//
// How the keys reach the other processes: the postmaster publishes each key
// set it loads, with the path, as a generation in shared memory
// (core/published_keys.hpp: the last kPublishedSlots of them, a sequence lock
// each), when its keys or path differ from the last one's. Each process forked
// from it inherits its keys and generation; at a reload, each one (its check
// hook) takes the newest generation from shared memory instead of the file,
// if that generation's path is the setting's new value. Otherwise the server
// did not load that value (the postmaster refused it, or ALTER SYSTEM or
// pg_file_settings is checking it): the process checks its file as the
// postmaster does, to refuse it if it is not fit (keeping its value and
// keys, with a message that does not quote the path: a session at
// client_min_messages = debug5 sees a backend's refusals), and never takes
// keys from it.
//
// Statements: a session takes a reload only between statements, so its keys
// are fixed for each of them. Its parallel workers use exactly those keys,
// never the file: at the start of each statement (ExecutorStart), a session
// whose generation changed writes (its PID, its generation) to its slot in
// shared memory, by proc number; a parallel worker, at its first call that
// needs a key, finds its leader's slot and takes that generation (from the
// keys it inherited if it is the postmaster's current one, else from shared
// memory). The worker's own setting hooks, which PostgreSQL runs as it takes
// its leader's settings, do nothing. So every row of a statement is encoded
// under one key, whatever the file holds and whatever reload lands meanwhile;
// a worker that cannot find its leader's keys (a leader without the preload,
// or one whose generation was overwritten after kPublishedSlots newer ones)
// fails the call that needs a key, never a query that needs none.
//
// How the keys are kept in a process: a check hook makes the new keys the
// `candidate` ring and hands PostgreSQL a number as the setting's extra; the
// assign hook that follows makes them `active` and frees the keys they
// replace (OpenSSL wipes them). The keys are never in an extra, which
// PostgreSQL frees without wiping, and every KeySet copy is wiped. The keys
// are in shared memory, as they are in each process's memory. Nothing here
// is destroyed by a static destructor: at process exit those run after
// OpenSSL's own cleanup.
#include "public_id_keys.hpp"

#include <cstdio>
#include <cstring>
#include <new>
#include <utility>

#include "../core/published_keys.hpp"
#include "compat.hpp"
#include "public_id_key_file.hpp"

namespace snowflake::pg {
namespace {

constexpr char kSetting[] = "snowflake.public_id_keys_file";

// A process's keys. Made once per process (inherited by the postmaster's
// children), never destroyed (see the header).
struct Keys {
  public_id::KeyRing active;
  uint32_t active_generation = 0;  // its generation in shared memory; 0: none
  public_id::KeyRing candidate;
  uint32_t candidate_generation = 0;
  uint64_t checks = 0;  // numbers the checks: an extra names its candidate
  uint64_t candidate_check = 0;
  // The reader's (the postmaster's, or a session's without the preload): the
  // keys as bytes and their path, which it publishes.
  public_id::KeySet active_set;
  char active_path[public_id::kSourceBytes] = "";
  public_id::KeySet candidate_set;
  char candidate_path[public_id::kSourceBytes] = "";
  // What require_public_id_keys_at_start() read, for the check that follows.
  public_id::KeySet start_set;
  char start_path[public_id::kSourceBytes] = "";
  bool read_at_start = false;
  // A session's: the generation it last wrote to its statement slot.
  uint32_t recorded_generation = 0;
  // A parallel worker's: it took its leader's keys.
  bool worker_has_leaders_keys = false;
};

Keys& keys() {
  alignas(Keys) static unsigned char storage[sizeof(Keys)];
  static Keys* made = new (storage) Keys();
  return *made;
}

// Shared memory (preload only): the published key sets, and one statement
// slot per backend, (PID << 32) | generation, written by its backend only.
public_id::PublishedKeySets* published = nullptr;
pg_atomic_uint64* statement_slots = nullptr;

shmem_request_hook_type previous_request_hook = nullptr;
shmem_startup_hook_type previous_startup_hook = nullptr;
ExecutorStart_hook_type previous_executor_start = nullptr;

// The setting's extra: which check made the candidate, and which generation
// it is (0 for the reader's, published when it is assigned).
struct Extra {
  uint64_t check;
  uint32_t generation;
};

// What a process does with the file and the setting.
enum class Role {
  kReader,     // reads the file: the postmaster, a session without the preload
  kFollower,   // takes the reader's keys from shared memory at each reload
  kWorker,     // a parallel worker: takes its leader's keys, at first use
  kBystander,  // the logger, which has no shared memory and needs no key
};

Role role() {
  if (IsParallelWorker()) return Role::kWorker;
  if (!IsUnderPostmaster) return Role::kReader;
  if (MyBackendType == B_LOGGER) return Role::kBystander;
  return published != nullptr ? Role::kFollower : Role::kReader;
}

bool is_set(const char* path) {
  return path != nullptr && path[0] != '\0';
}

// Makes `ring` of `set`; on failure says why in `problem`.
bool make_ring(const public_id::KeySet& set, public_id::KeyRing* ring, LoadProblem* problem) {
  int version = -1;
  const ff1::Status status = ring->load(set, &version);
  if (status == ff1::Status::kOk) return true;
  snprintf(problem->detail, sizeof(problem->detail), "OpenSSL refused the key of version %c: %s.",
           base32::digit(version), ff1::status_name(status));
  problem->hint = "The server log may say why OpenSSL's libcrypto refused.";
  return false;
}

// Refuses the setting's new value in a check hook. A backend's refusal goes
// to its client at DEBUG3: its message then does not quote the path.
bool refuse(const LoadProblem& problem) {
  if (IsUnderPostmaster) GUC_check_errmsg("invalid value for parameter \"%s\"", kSetting);
  GUC_check_errdetail("%s", problem.detail);
  GUC_check_errhint("%s", problem.hint);
  return false;
}

bool hand_over(void** extra, uint64_t check, uint32_t generation) {
  auto* made = static_cast<Extra*>(compat::guc_extra_alloc(sizeof(Extra)));
  if (made == nullptr) {
    LoadProblem problem;
    snprintf(problem.detail, sizeof(problem.detail), "Out of memory.");
    problem.hint = "Reload again.";
    return refuse(problem);
  }
  made->check = check;
  made->generation = generation;
  *extra = made;
  return true;
}

// The reader's check: the file into the candidate (the start's reading, if it
// is of this path).
bool check_as_reader(const char* path, void** extra) {
  Keys& all = keys();
  all.candidate.clear();
  all.candidate_set.clear();
  all.candidate_path[0] = '\0';
  all.candidate_check = ++all.checks;
  if (is_set(path)) {
    LoadProblem problem;
    const bool read_at_start = all.read_at_start && strcmp(all.start_path, path) == 0;
    if (read_at_start) std::swap(all.candidate_set, all.start_set);
    all.start_set.clear();
    all.read_at_start = false;
    if (!read_at_start && !read_key_file(path, &all.candidate_set, &problem)) {
      all.candidate_set.clear();
      return refuse(problem);
    }
    if (!make_ring(all.candidate_set, &all.candidate, &problem)) {
      all.candidate_set.clear();
      return refuse(problem);
    }
    strlcpy(all.candidate_path, path, sizeof(all.candidate_path));
  }
  return hand_over(extra, all.candidate_check, 0);
}

// A follower's check: the newest generation, if it is of this path. A value
// the server did not load (the postmaster refused it at this reload, or
// ALTER SYSTEM or pg_file_settings checks it) has its file checked as the
// postmaster checks it, and never gives keys: refused if the file is not fit,
// else taken with the keys unchanged.
bool check_as_follower(const char* path, void** extra) {
  Keys& all = keys();
  all.candidate.clear();
  all.candidate_check = ++all.checks;
  public_id::KeySet set;
  char source[public_id::kSourceBytes];
  uint32_t generation = 0;
  LoadProblem problem;
  bool ok = published->read_latest(&generation, &set, source);
  bool loaded = ok && strcmp(source, path != nullptr ? path : "") == 0;
  if (!ok) {
    snprintf(problem.detail, sizeof(problem.detail),
             "The keys the server loaded could not be read from shared memory.");
    problem.hint = "Reload again.";
  } else if (!loaded) {
    ok = !is_set(path) || read_key_file(path, &set, &problem);
  } else if (generation != all.active_generation) {
    ok = make_ring(set, &all.candidate, &problem);
  }
  set.clear();
  if (!ok) return refuse(problem);
  if (!loaded) return true;  // no extra: the assign hook leaves the keys alone
  all.candidate_generation = generation;
  return hand_over(extra, all.candidate_check, generation);
}

// The reader's keys, published if they differ from the last published.
void publish_active() {
  Keys& all = keys();
  public_id::KeySet last;
  char source[public_id::kSourceBytes];
  const bool unchanged =
      all.active_generation != 0 && published->read(all.active_generation, &last, source) &&
      public_id::same_keys(last, all.active_set) && strcmp(source, all.active_path) == 0;
  last.clear();
  if (!unchanged) all.active_generation = published->publish(all.active_set, all.active_path);
}

void request_hook() {
  if (previous_request_hook) previous_request_hook();
  RequestAddinShmemSpace(add_size(sizeof(public_id::PublishedKeySets),
                                  mul_size(MaxBackends, sizeof(pg_atomic_uint64))));
}

void startup_hook() {
  if (previous_startup_hook) previous_startup_hook();
  LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
  bool found_keys = false;
  bool found_slots = false;
  void* memory =
      ShmemInitStruct("snowflake public ID keys", sizeof(public_id::PublishedKeySets), &found_keys);
  auto* slots = static_cast<pg_atomic_uint64*>(
      ShmemInitStruct("snowflake public ID statements",
                      mul_size(MaxBackends, sizeof(pg_atomic_uint64)), &found_slots));
  published = found_keys ? static_cast<public_id::PublishedKeySets*>(memory)
                         : new (memory) public_id::PublishedKeySets();
  if (!found_slots)
    for (int i = 0; i < MaxBackends; i++) pg_atomic_init_u64(&slots[i], 0);
  statement_slots = slots;
  LWLockRelease(AddinShmemInitLock);
  // The postmaster (at start, and again after a crash reinitialized shared
  // memory) publishes the keys it loaded; its children are forked after this.
  if (!IsUnderPostmaster) {
    keys().active_generation = 0;
    publish_active();
  }
}

// Records the generation of this session's keys for its parallel workers,
// before the statement can start any.
void record_statement_keys(QueryDesc* query, int eflags) {
  Keys& all = keys();
  if (unlikely(all.recorded_generation != all.active_generation) && statement_slots != nullptr &&
      MyProc != nullptr && !IsParallelWorker()) {
    const int slot = compat::my_proc_number();
    if (slot < MaxBackends) {
      pg_atomic_write_u64(
          &statement_slots[slot],
          static_cast<uint64>(static_cast<uint32>(MyProcPid)) << 32 | all.active_generation);
      pg_memory_barrier();
      all.recorded_generation = all.active_generation;
    }
  }
  if (previous_executor_start)
    previous_executor_start(query, eflags);
  else
    standard_ExecutorStart(query, eflags);
}

// A parallel worker's keys: its leader's, for the statement.
void take_leaders_keys() {
  Keys& all = keys();
  if (published == nullptr) {
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("a parallel worker has no key for public IDs"),
             errdetail("Without snowflake in shared_preload_libraries, a parallel worker cannot "
                       "have the keys its leader loaded, and it never reads the key file."),
             errhint("Add snowflake to shared_preload_libraries and restart the server, or SET "
                     "max_parallel_workers = 0 in this session: its statements then run in "
                     "it alone.")));
  }
  const PGPROC* leader = MyProc != nullptr ? MyProc->lockGroupLeader : nullptr;
  if (leader == nullptr || leader == MyProc)
    elog(ERROR, "snowflake: a parallel worker without a leader");
  const int slot = compat::proc_number_of(leader);
  const uint64 recorded = slot < MaxBackends ? pg_atomic_read_u64(&statement_slots[slot]) : 0;
  const auto generation = static_cast<uint32_t>(recorded);
  bool found = static_cast<int>(recorded >> 32) == leader->pid && generation != 0;
  if (found && generation != all.active_generation) {
    public_id::KeySet set;
    char source[public_id::kSourceBytes];
    found = published->read(generation, &set, source);
    LoadProblem problem;
    const bool made = found && make_ring(set, &all.candidate, &problem);
    set.clear();
    if (found && !made) {
      all.candidate.clear();
      ereport(ERROR, (errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
                      errmsg("a parallel worker could not make the keys of public IDs"),
                      errdetail("%s", problem.detail), errhint("%s", problem.hint)));
    }
    if (made) {
      std::swap(all.active, all.candidate);
      all.candidate.clear();
      all.active_generation = generation;
    }
  }
  if (!found) {
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("the keys of public IDs this statement began with are no longer kept"),
                    errdetail("A parallel worker uses the keys its leader used when the statement "
                              "began; the server kept the last %u key sets, and the leader's "
                              "(generation %u) is not among them (the newest is %u).",
                              public_id::kPublishedSlots, generation, published->latest()),
                    errhint("Run the statement again.")));
  }
  all.worker_has_leaders_keys = true;
}

}  // namespace

const public_id::KeyRing& public_id_keys_for_call() {
  Keys& all = keys();
  if (unlikely(IsParallelWorker()) && !all.worker_has_leaders_keys) take_leaders_keys();
  return all.active;
}

bool check_public_id_keys_file(char** newval, void** extra, GucSource) {
  switch (role()) {
    case Role::kReader:
      return check_as_reader(*newval, extra);
    case Role::kFollower:
      return check_as_follower(*newval, extra);
    case Role::kWorker:
    case Role::kBystander:
      break;
  }
  return true;  // no extra: the assign hook leaves the keys alone
}

void assign_public_id_keys_file(const char*, void* extra) {
  if (extra == nullptr) return;
  const Extra& made = *static_cast<const Extra*>(extra);
  Keys& all = keys();
  // The keys of the check just made. Another check's extra is of keys already
  // active, which PostgreSQL may assign again: nothing changes.
  if (made.check != all.candidate_check) return;
  all.candidate_check = 0;
  if (role() == Role::kFollower) {
    if (made.generation == all.active_generation) return;  // the keys in use
    std::swap(all.active, all.candidate);
    all.candidate.clear();
    all.active_generation = made.generation;
    return;
  }
  std::swap(all.active, all.candidate);
  all.candidate.clear();
  std::swap(all.active_set, all.candidate_set);
  all.candidate_set.clear();
  strlcpy(all.active_path, all.candidate_path, sizeof(all.active_path));
  if (published != nullptr && !IsUnderPostmaster) publish_active();
}

void require_public_id_keys_at_start() {
  const char* path = GetConfigOption(kSetting, true, false);
  if (!is_set(path)) return;
  Keys& all = keys();
  LoadProblem problem;
  all.read_at_start = read_key_file(path, &all.start_set, &problem);
  if (all.read_at_start) {
    strlcpy(all.start_path, path, sizeof(all.start_path));
    return;
  }
  all.start_set.clear();
  ereport(ERROR, (errcode(ERRCODE_CONFIG_FILE_ERROR),
                  errmsg("could not load the keys of public IDs from %s", kSetting),
                  errdetail("%s", problem.detail), errhint("%s", problem.hint)));
}

void request_public_id_memory() {
  previous_request_hook = shmem_request_hook;
  shmem_request_hook = request_hook;
  previous_startup_hook = shmem_startup_hook;
  shmem_startup_hook = startup_hook;
  previous_executor_start = ExecutorStart_hook;
  ExecutorStart_hook = record_statement_keys;
}

}  // namespace snowflake::pg
