// Public IDs in SQL (issues 40 and 45, doc/public-ids.md): snowflake_to_public
// and snowflake_from_public, and the keys they use, from the file that
// snowflake.public_id_keys_file names.
//
// Why a file: a setting's value goes where a key must not. PostgreSQL writes
// the new value of a setting changed at reload to the server log ("parameter
// ... changed to ..."), quotes a value it rejects, and shows values in
// pg_file_settings. The setting holds a path, so those places show a path.
// The file (one key a line, core/public_id.hpp) is the server user's alone:
// its owner, or root, may read it, nobody else (the rule of ssl_key_file).
//
// Who reads the file, and when: one process takes keys from it, the
// postmaster, at server start and at every reload (the setting's check hook,
// before it signals the other processes to reload); another process only
// checks the file of a value the server did not load (below). Before it opens the file it checks it
// with stat(): a regular file (a symbolic link is followed), its owner and mode, its size; it then
// opens it without blocking (O_NONBLOCK: a FIFO put there meanwhile opens at once, and fstat()
// refuses it) and checks that it opened that same file. A file that cannot be loaded is refused as
// any invalid setting is: at a reload the keys loaded before stay, and the postmaster's log line
// says which line is at fault and why, never what the line holds; at server start it stops the
// server, as a bad ssl_key_file does. Without the preload there is no postmaster of ours: each
// session that loads the library reads the file itself, when it loads it and at each reload.
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
#include "public_id.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "../core/public_id.hpp"
#include "../core/published_keys.hpp"
#include "boundary.hpp"
#include "compat.hpp"
#include "text.hpp"

namespace snowflake::pg {
namespace {

constexpr off_t kMaxKeyFileBytes = 64 * 1024;
constexpr char kSetting[] = "snowflake.public_id_keys_file";
constexpr char kFileHint[] =
    "Write the keys to a file that the server's operating-system user owns and alone can read "
    "(chmod 600), and name it in snowflake.public_id_keys_file (doc/public-ids.md).";
constexpr char kLineHint[] =
    "Each line is a version (one base32 digit: 0-9, A-Z without I, L, O, U) and a key of 32, 48 "
    "or 64 hexadecimal digits, such as `openssl rand -hex 32` writes; # starts a comment.";

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

// Why a file could not be loaded, for a message: names a line, never its text.
struct LoadProblem {
  char detail[256];
  const char* hint;
};

const char* line_fault(public_id::KeyFileStatus status) {
  switch (status) {
    case public_id::KeyFileStatus::kBadVersion:
      return "its first word is not a version, one base32 digit";
    case public_id::KeyFileStatus::kDuplicateVersion:
      return "its version is listed before";
    case public_id::KeyFileStatus::kMissingKey:
      return "it has a version and no key";
    case public_id::KeyFileStatus::kBadKey:
      return "its key is not 32, 48 or 64 hexadecimal digits";
    case public_id::KeyFileStatus::kExtraText:
      return "it has more than a version and a key";
    case public_id::KeyFileStatus::kOk:
    case public_id::KeyFileStatus::kNoKey:
    case public_id::KeyFileStatus::kCryptoFailure:
      break;
  }
  return "it is not a key line";
}

const char* file_type(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Whether the file of `status` may hold keys: a regular file, the server
// user's or root's, no access for others, not too large.
bool acceptable_file(const struct stat& status, LoadProblem* problem) {
  if (!S_ISREG(status.st_mode)) {
    snprintf(problem->detail, sizeof(problem->detail), "It is %s, not a regular file.",
             file_type(status.st_mode));
  } else if (status.st_uid != geteuid() && status.st_uid != 0) {
    snprintf(problem->detail, sizeof(problem->detail),
             "The file is owned by neither the database user nor root.");
  } else if ((status.st_uid == geteuid() && (status.st_mode & (S_IRWXG | S_IRWXO)) != 0) ||
             (status.st_uid == 0 && (status.st_mode & (S_IWGRP | S_IXGRP | S_IRWXO)) != 0)) {
    snprintf(problem->detail, sizeof(problem->detail),
             "The file has group or world access (mode %04o); it must be 0600 or less if owned "
             "by the database user, 0640 or less if owned by root.",
             static_cast<unsigned>(status.st_mode & 07777));
  } else if (status.st_size > kMaxKeyFileBytes) {
    snprintf(problem->detail, sizeof(problem->detail),
             "The file is %lld bytes long; a key file has at most %lld.",
             static_cast<long long>(status.st_size), static_cast<long long>(kMaxKeyFileBytes));
  } else {
    return true;
  }
  return false;
}

// Reads the file at `path` into `set`: checked before it is opened, opened
// without blocking, checked again once open. No PostgreSQL call (the
// postmaster runs it in a check hook): plain POSIX, and the text wiped before
// it is freed.
bool read_key_file(const char* path, public_id::KeySet* set, LoadProblem* problem) {
  problem->hint = kFileHint;
  set->clear();
  if (strlen(path) >= public_id::kSourceBytes) {
    snprintf(problem->detail, sizeof(problem->detail),
             "The path is %zu bytes long; at most %zu are allowed.", strlen(path),
             public_id::kSourceBytes - 1);
    return false;
  }
  struct stat named;
  if (stat(path, &named) != 0) {
    snprintf(problem->detail, sizeof(problem->detail), "Could not read the file's status: %s.",
             strerror(errno));
    return false;
  }
  if (!acceptable_file(named, problem)) return false;
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(problem->detail, sizeof(problem->detail), "Could not open the file: %s.",
             strerror(errno));
    return false;
  }
  struct stat opened;
  bool ok = false;
  if (fstat(fd, &opened) != 0) {
    snprintf(problem->detail, sizeof(problem->detail), "Could not read the file's status: %s.",
             strerror(errno));
  } else if (opened.st_dev != named.st_dev || opened.st_ino != named.st_ino) {
    snprintf(problem->detail, sizeof(problem->detail),
             "The file was replaced while it was opened.");
  } else {
    ok = acceptable_file(opened, problem);
  }
  char* text = nullptr;
  std::size_t length = 0;
  if (ok) {
    text = static_cast<char*>(malloc(static_cast<std::size_t>(opened.st_size) + 1));
    if (text == nullptr) {
      snprintf(problem->detail, sizeof(problem->detail), "Out of memory.");
      ok = false;
    }
  }
  while (ok && length < static_cast<std::size_t>(opened.st_size)) {
    const ssize_t got = read(fd, text + length, static_cast<std::size_t>(opened.st_size) - length);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      snprintf(problem->detail, sizeof(problem->detail), "Could not read the file: %s.",
               strerror(errno));
      ok = false;
    }
    if (got <= 0) break;  // shorter than its status said: what is there
    length += static_cast<std::size_t>(got);
  }
  close(fd);
  if (ok) {
    const public_id::KeyFileResult result = public_id::parse_key_file(text, length, set);
    if (result.status == public_id::KeyFileStatus::kNoKey) {
      snprintf(problem->detail, sizeof(problem->detail), "The file lists no key.");
      problem->hint = kLineHint;
      ok = false;
    } else if (result.status != public_id::KeyFileStatus::kOk) {
      snprintf(problem->detail, sizeof(problem->detail), "Line %d of the file: %s.", result.line,
               line_fault(result.status));
      problem->hint = kLineHint;
      ok = false;
    }
  }
  if (text != nullptr) {
    ff1::wipe(text, length);
    free(text);
  }
  return ok;
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

// The keys a call uses.
const public_id::KeyRing& keys_for_call() {
  Keys& all = keys();
  if (unlikely(IsParallelWorker()) && !all.worker_has_leaders_keys) take_leaders_keys();
  return all.active;
}

// The tweak argument's bytes (none without the argument), in UTF-8.
struct Tweak {
  const uint8_t* bytes = nullptr;
  std::size_t length = 0;
};

bool is_ascii(const char* bytes, int length) {
  for (int i = 0; i < length; i++)
    if (static_cast<unsigned char>(bytes[i]) >= 0x80) return false;
  return true;
}

// A tweak with other than ASCII in a database not in UTF-8: converted, so
// that the same tweak gives the same bytes in every database. SQL_ASCII says
// nothing of what its bytes mean: they must be UTF-8 already. Every other
// server encoding converts to UTF-8 but MULE_INTERNAL (and a character
// UTF-8 lacks fails as PostgreSQL's conversions fail).
Tweak tweak_in_utf8(const char* bytes, int length) {
  const int encoding = GetDatabaseEncoding();
  if (encoding == PG_SQL_ASCII) {
    const int valid = pg_encoding_verifymbstr(PG_UTF8, bytes, length);
    if (valid < length) {
      ereport(ERROR,
              (errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
               errmsg("the tweak of a public ID is not valid UTF-8"),
               errdetail("A tweak is taken as UTF-8, and this database's encoding, SQL_ASCII, "
                         "says nothing of what its bytes are: byte %d of the tweak (0x%02x) is "
                         "not valid UTF-8.",
                         valid + 1, static_cast<unsigned char>(bytes[valid])),
               errhint("Pass the tweak in UTF-8, or in ASCII alone (doc/public-ids.md, "
                       "\"Tweaks\").")));
    }
    return {reinterpret_cast<const uint8_t*>(bytes), static_cast<std::size_t>(length)};
  }
  static bool converts = false;  // the database's encoding has a conversion to UTF-8
  if (unlikely(!converts)) {
    if (!OidIsValid(FindDefaultConversionProc(encoding, PG_UTF8))) {
      ereport(ERROR,
              (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
               errmsg("the tweak of a public ID cannot be converted to UTF-8"),
               errdetail("A tweak is taken as UTF-8, and PostgreSQL has no conversion from this "
                         "database's encoding, %s, to UTF-8.",
                         GetDatabaseEncodingName()),
               errhint("Pass a tweak in ASCII alone (doc/public-ids.md, \"Tweaks\").")));
    }
    converts = true;
  }
  const char* converted = pg_server_to_any(bytes, length, PG_UTF8);
  if (converted == bytes)
    return {reinterpret_cast<const uint8_t*>(bytes), static_cast<std::size_t>(length)};
  return {reinterpret_cast<const uint8_t*>(converted), strlen(converted)};
}

Tweak tweak_argument(FunctionCallInfo fcinfo, int argno) {
  if (PG_NARGS() <= argno) return {};
  const text* tweak = PG_GETARG_TEXT_PP(argno);
  const char* bytes = VARDATA_ANY(tweak);
  const int length = VARSIZE_ANY_EXHDR(tweak);
  if (likely(GetDatabaseEncoding() == PG_UTF8) || is_ascii(bytes, length))
    return {reinterpret_cast<const uint8_t*>(bytes), static_cast<std::size_t>(length)};
  return tweak_in_utf8(bytes, length);
}

void require_keys(const public_id::KeyRing& ring) {
  if (likely(!ring.empty())) return;
  ereport(ERROR,
          (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
           errmsg("no key for public IDs is configured"),
           errdetail("snowflake.public_id_keys_file is empty, or the file it names could not be "
                     "loaded (the server log says why)."),
           errhint("A superuser sets snowflake.public_id_keys_file in postgresql.conf to a file of "
                   "keys (doc/public-ids.md), then reloads.")));
}

void report_cipher_failure(ff1::Status status) {
  ereport(ERROR, (errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
                  errmsg("FF1 failed for a public ID: %s", ff1::status_name(status)),
                  errhint("OpenSSL's libcrypto refused; the server log may say why.")));
}

void require_decoded(const public_id::KeyRing& ring, const public_id::DecodeResult& result,
                     const char* text, int length) {
  if (result.status == public_id::DecodeStatus::kOk) return;
  const char* shown = quoted_text(text, static_cast<std::size_t>(length));
  constexpr char kPassHint[] =
      "Pass a text that snowflake_to_public() returned: a key version and 13 Crockford base32 "
      "digits.";
  switch (result.status) {
    case public_id::DecodeStatus::kOk:
    case public_id::DecodeStatus::kNoKey:  // require_keys() came first
      return;
    case public_id::DecodeStatus::kInvalidCharacter:
      refuse_base32_character("invalid public ID", shown, text, result.position);
    case public_id::DecodeStatus::kWrongLength:
      ereport(
          ERROR,
          (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION), errmsg("invalid public ID: \"%s\"", shown),
           errdetail("It has %d characters; a public ID has %d.",
                     pg_mbstrlen_with_len(text, length), static_cast<int>(public_id::kWidth)),
           errhint("%s", kPassHint)));
      break;
    case public_id::DecodeStatus::kUnknownVersion: {
      char versions[3 * public_id::kVersions];
      ring.describe_versions(versions, sizeof(versions));
      ereport(
          ERROR,
          (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION), errmsg("invalid public ID: \"%s\"", shown),
           errdetail("Its first character, \"%c\", names the version of its key; the keys "
                     "configured are of versions %s.",
                     base32::digit(result.version), versions),
           errhint("A text made under a key that has since left snowflake.public_id_keys_file "
                   "no longer decodes: keep a key in the file while its texts are in use.")));
      break;
    }
    case public_id::DecodeStatus::kOutOfRange:
      ereport(
          ERROR,
          (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION), errmsg("invalid public ID: \"%s\"", shown),
           errdetail("Its second character is above 7: the 13 digits after the version hold "
                     "63 bits."),
           errhint("%s", kPassHint)));
      break;
    case public_id::DecodeStatus::kCipherFailure:
      report_cipher_failure(result.cipher);
      break;
  }
}

}  // namespace

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

using namespace snowflake::pg;
namespace public_id = snowflake::public_id;

SNOWFLAKE_FUNCTION(snowflake_to_public) {
  const int64_t id = PG_GETARG_INT64(0);
  if (id < 0) {
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("snowflake ID must not be negative"),
             errdetail("The ID given is %lld; snowflake IDs are positive bigint values (the sign "
                       "bit is always 0).",
                       static_cast<long long>(id)),
             errhint("Pass an ID returned by snowflake_nextval().")));
  }
  const Tweak tweak = tweak_argument(fcinfo, 1);
  const public_id::KeyRing& ring = keys_for_call();
  require_keys(ring);
  char digits[public_id::kWidth];
  const snowflake::ff1::Status status =
      public_id::encode(ring, id, tweak.bytes, tweak.length, digits);
  if (status != snowflake::ff1::Status::kOk) report_cipher_failure(status);
  PG_RETURN_TEXT_P(cstring_to_text_with_len(digits, sizeof(digits)));
}

SNOWFLAKE_FUNCTION(snowflake_from_public) {
  const text* input = PG_GETARG_TEXT_PP(0);
  const char* characters = VARDATA_ANY(input);
  const int length = VARSIZE_ANY_EXHDR(input);
  const Tweak tweak = tweak_argument(fcinfo, 1);
  const public_id::KeyRing& ring = keys_for_call();
  require_keys(ring);
  const public_id::DecodeResult result = public_id::decode(
      ring, characters, static_cast<std::size_t>(length), tweak.bytes, tweak.length);
  require_decoded(ring, result, characters, length);
  PG_RETURN_INT64(result.id);
}
