// The state file pg_snowflake/state, and its directory (state_file.hpp).
// Only one process writes the state file at a time: a backend or the
// operator's adoption under durable_lock, the startup process in redo, the
// postmaster at a clean shutdown.
#include "state_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include <sys/stat.h>

#include "../node_memory.hpp"
#include "../settings.hpp"
#include "marks.hpp"

namespace snowflake::pg {

namespace {

constexpr char kStatePath[] = "pg_snowflake/state";
constexpr char kStateTempPath[] = "pg_snowflake/state.tmp";
constexpr char kGivenPath[] = "pg_snowflake/given";
constexpr uint32 kStateMagic = 0x534e4f57;  // "SNOW"
// Version 3 (1.8) records the durable bound in force when the file was
// written beside the bound the generator restores (they differ only in the
// exact bound of a clean shutdown), and the id of the replication origin that
// holds the durable bound too (bound_register.cpp), so that a start can tell
// a file older than its data directory from its own. Version 2 (1.7) records the system
// identifier of the cluster that wrote the file, so that a start can tell
// another system's file from its own (core/bound.hpp); version 1 (1.6 and
// earlier) does not. Both are still read (their bound as the durable one
// too), and rewritten as version 3 at the next write.
constexpr uint32 kStateVersion = 3;
constexpr uint32 kStateVersionWithSystem = 2;
constexpr uint32 kStateVersionWithoutSystem = 1;

struct StateFileV1 {
  uint32 magic;
  uint32 version;
  uint64_t id_bound;
  int64_t epoch_ms;
  int32 bits[4];  // timestamp, datacenter, worker, sequence
  pg_crc32c crc;  // of everything above
};

struct StateFileV2 {
  uint32 magic;
  uint32 version;
  uint64_t id_bound;
  int64_t epoch_ms;
  int32 bits[4];               // timestamp, datacenter, worker, sequence
  uint64_t system_identifier;  // of the writer
  pg_crc32c crc;               // of everything above
};

struct StateFile {
  uint32 magic;
  uint32 version;
  uint64_t id_bound;  // the generator restores this
  int64_t epoch_ms;
  int32 bits[4];               // timestamp, datacenter, worker, sequence
  uint64_t system_identifier;  // of the writer; 0 when read from version 1
  uint64_t durable_id_bound;   // the durable bound in force; id_bound when read from 1 or 2
  uint16 origin_id;            // the replication origin of the bound (0: none known)
  pg_crc32c crc;               // of everything above
};
static_assert(sizeof(StateFile) == 64, "the state file of version 3 has 64 bytes");

template <typename File>
pg_crc32c state_crc(const File& file) {
  pg_crc32c crc;
  INIT_CRC32C(crc);
  COMP_CRC32C(crc, &file, offsetof(File, crc));
  FIN_CRC32C(crc);
  return crc;
}

// Why `got` bytes are not a state file of `version` (`crc_matches`), in the
// words of StateFileRead::problem.
void damaged(char* problem, size_t size, ssize_t got, bool known_size, uint32 magic, uint32 version,
             bool crc_matches) {
  if (!known_size)
    snprintf(problem, size, "was damaged (%zd bytes, where a state file has %zu, %zu or %zu)", got,
             sizeof(StateFileV1), sizeof(StateFileV2), sizeof(StateFile));
  else if (magic != kStateMagic)
    snprintf(problem, size, "was damaged (not a snowflake state file: magic number %08x)", magic);
  else if (!crc_matches)
    snprintf(problem, size, "was damaged (version %u, %zd bytes, its checksum did not match)",
             version, got);
  else
    snprintf(problem, size, "was damaged (version %u is not one of %zd bytes)", version, got);
}

// `file` as read from `got` bytes at `bytes`: a version 3, 2 or 1 file;
// false (and why in `problem`) if it is none.
bool parse_state(const char* bytes, ssize_t got, StateFile* file, char* problem, size_t size) {
  uint32 head[2] = {0, 0};
  if (got >= static_cast<ssize_t>(sizeof(head))) memcpy(head, bytes, sizeof(head));
  memset(file, 0, sizeof(*file));
  bool crc_matches = false;
  if (got == static_cast<ssize_t>(sizeof(StateFile))) {
    memcpy(file, bytes, sizeof(*file));
    crc_matches = file->crc == state_crc(*file);
    if (file->magic == kStateMagic && file->version == kStateVersion && crc_matches) return true;
  } else if (got == static_cast<ssize_t>(sizeof(StateFileV2))) {
    StateFileV2 old;
    memcpy(&old, bytes, sizeof(old));
    crc_matches = old.crc == state_crc(old);
    if (old.magic == kStateMagic && old.version == kStateVersionWithSystem && crc_matches) {
      file->system_identifier = old.system_identifier;
      file->id_bound = file->durable_id_bound = old.id_bound;
      file->epoch_ms = old.epoch_ms;
      memcpy(file->bits, old.bits, sizeof(file->bits));
      file->magic = old.magic;
      file->version = old.version;
      return true;
    }
  } else if (got == static_cast<ssize_t>(sizeof(StateFileV1))) {
    StateFileV1 old;
    memcpy(&old, bytes, sizeof(old));
    crc_matches = old.crc == state_crc(old);
    if (old.magic == kStateMagic && old.version == kStateVersionWithoutSystem && crc_matches) {
      file->id_bound = file->durable_id_bound = old.id_bound;
      file->epoch_ms = old.epoch_ms;
      memcpy(file->bits, old.bits, sizeof(file->bits));
      file->magic = old.magic;
      file->version = old.version;
      return true;
    }
  } else {
    damaged(problem, size, got, false, 0, 0, false);
    return false;
  }
  damaged(problem, size, got, true, head[0], head[1], crc_matches);
  return false;
}

// Reads the state file at `path` into `file`. Never raises: a missing file,
// one that is not a state file (another size, magic or version, a wrong
// checksum) and one that cannot be opened or read are told apart in `why`
// and in words in `problem` (errno kept for the caller's %m).
bool read_state(const char* path, StateFile* file, bound::Unread* why, char* problem, size_t size) {
  const int fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
  if (fd < 0) {
    const int open_errno = errno;
    *why = open_errno == ENOENT ? bound::Unread::kMissing : bound::Unread::kUnreadable;
    if (open_errno == ENOENT)
      strlcpy(problem, "was missing", size);
    else
      snprintf(problem, size, "could not be opened (%s)", strerror(open_errno));
    errno = open_errno;
    return false;
  }
  // One byte more than the largest version, to see a longer file.
  char bytes[sizeof(StateFile) + 1];
  const ssize_t got = read(fd, bytes, sizeof(bytes));
  const int read_errno = errno;
  CloseTransientFile(fd);
  if (got < 0) {
    *why = bound::Unread::kUnreadable;
    snprintf(problem, size, "could not be read (%s)", strerror(read_errno));
    errno = read_errno;
    return false;
  }
  if (!parse_state(bytes, got, file, problem, size)) {
    *why = bound::Unread::kDamaged;
    return false;
  }
  return true;
}

// The bound in `file` as a time of this server's layout, warning if the
// layout changed since it was written.
int64_t bound_of(const StateFile& file) {
  const Layout& layout = settings.layout;
  if (file.epoch_ms != layout.epoch_ms() || file.bits[0] != layout.timestamp_bits() ||
      file.bits[1] != layout.datacenter_bits() || file.bits[2] != layout.worker_bits() ||
      file.bits[3] != layout.sequence_bits()) {
    ereport(
        WARNING,
        (errmsg("snowflake layout or epoch changed since this node last issued IDs"),
         errdetail("The IDs were issued with snowflake.epoch = %lld and widths %d/%d/%d/%d; "
                   "the server now has snowflake.epoch = %lld and widths %d/%d/%d/%d.",
                   static_cast<long long>(file.epoch_ms), file.bits[0], file.bits[1], file.bits[2],
                   file.bits[3], static_cast<long long>(layout.epoch_ms()), layout.timestamp_bits(),
                   layout.datacenter_bits(), layout.worker_bits(), layout.sequence_bits()),
         errhint("New IDs still stay above every ID issued before, so a change that makes "
                 "them smaller leaves the node unable to issue IDs until its clock catches "
                 "up.")));
  }
  return layout.timestamp_bound(file.id_bound);
}

}  // namespace

// Makes pg_snowflake/ if it is missing, durably; false (raised at `elevel`)
// if it cannot.
bool make_state_directory(int elevel) {
  if (MakePGDirectory(kStateDirectory) == 0) {
    // A new directory's entry is durable only once its parent is fsynced.
    return fsync_fname_ext(".", true, false, elevel) == 0;
  }
  if (errno == EEXIST) return true;
  ereport(elevel, (errcode_for_file_access(),
                   errmsg("could not create directory \"%s\": %m", kStateDirectory)));
  return false;
}

void remove_state_entry(const char* path, int elevel) {
  if (unlink(path) == 0) {
    (void)fsync_fname_ext(kStateDirectory, true, false, elevel);
  } else if (errno != ENOENT) {
    ereport(elevel, (errcode_for_file_access(), errmsg("could not remove file \"%s\": %m", path)));
  }
}

// Writes the bound `until` (and the durable bound in force) to the state
// file durably: a complete new file, fsynced, then renamed over the old one.
// Raises `elevel` on failure, and returns whether it succeeded.
bool write_state_file(int64_t until, int64_t durable, int elevel) {
  const Layout& layout = settings.layout;
  StateFile file;
  memset(&file, 0, sizeof(file));
  file.magic = kStateMagic;
  file.version = kStateVersion;
  file.id_bound = layout.id_bound(until);
  file.durable_id_bound = layout.id_bound(std::max(until, durable));
  file.epoch_ms = layout.epoch_ms();
  file.bits[0] = layout.timestamp_bits();
  file.bits[1] = layout.datacenter_bits();
  file.bits[2] = layout.worker_bits();
  file.bits[3] = layout.sequence_bits();
  file.system_identifier = GetSystemIdentifier();
  file.origin_id = shared_node != nullptr ? shared_node->register_origin : 0;
  file.crc = state_crc(file);

  // (durable_rename below fsyncs the directory itself, not its parent.)
  if (!make_state_directory(elevel)) return false;
  const int fd = OpenTransientFile(kStateTempPath, O_CREAT | O_WRONLY | O_TRUNC | PG_BINARY);
  if (fd < 0) {
    ereport(elevel, (errcode_for_file_access(),
                     errmsg("could not create file \"%s\": %m", kStateTempPath)));
    return false;
  }
  errno = 0;
  const bool written = write(fd, &file, sizeof(file)) == static_cast<ssize_t>(sizeof(file));
  if (!written && errno == 0) errno = ENOSPC;
  const bool synced = written && pg_fsync(fd) == 0;
  const int saved_errno = errno;
  CloseTransientFile(fd);
  if (!synced) {
    errno = saved_errno;
    ereport(elevel,
            (errcode_for_file_access(),
             errmsg("could not %s file \"%s\": %m", written ? "fsync" : "write", kStateTempPath)));
    return false;
  }
  // durable_rename() opens the file it replaces to fsync it first: one the
  // server may not open (chmod 000) would fail every write. It is replaced
  // anyway, and a crash in between leaves no state file, which the next
  // start treats as missing.
  if (access(kStatePath, W_OK) != 0 && errno == EACCES && unlink(kStatePath) != 0) {
    ereport(elevel,
            (errcode_for_file_access(), errmsg("could not remove file \"%s\": %m", kStatePath)));
    return false;
  }
  return durable_rename(kStateTempPath, kStatePath, elevel) == 0;
}

StateFileRead read_state_file() {
  StateFileRead result;
  StateFile file;
  result.read =
      read_state(kStatePath, &file, &result.unread, result.problem, sizeof(result.problem));
  if (!result.read) return result;
  result.system_identifier = file.system_identifier;
  result.origin_id = file.origin_id;
  // Another system's layout says nothing of this one's: no warning.
  if (file.system_identifier == 0 || file.system_identifier == GetSystemIdentifier()) {
    result.until = bound_of(file);
    result.durable = settings.layout.timestamp_bound(file.durable_id_bound);
  }
  return result;
}

bool read_given_state_file(int64_t* until) {
  StateFile file;
  bound::Unread why;
  char problem[128];
  if (read_state(kGivenPath, &file, &why, problem, sizeof(problem))) {
    *until = bound_of(file);
    return true;
  }
  if (why == bound::Unread::kMissing) return false;
  ereport(WARNING,
          (errcode(ERRCODE_DATA_CORRUPTED),
           errmsg("snowflake: pg_snowflake/given %s; its bound is not taken", problem),
           errdetail("It is the state file of the data directory this one was upgraded from, "
                     "which Debian's pg_upgradecluster hook placed; without it the bound above "
                     "that directory's IDs comes from its own state file, given by an operator "
                     "when snowflake_nextval() asks for it."),
           errhint("Remove pg_snowflake/given. If snowflake_nextval() then refuses, as a "
                   "superuser SELECT snowflake_restore_bound('/path/to/old/data') with the "
                   "data directory this one was upgraded from.")));
  return false;
}

void remove_given_state_file(int elevel) {
  remove_state_entry(kGivenPath, elevel);
}
uint64_t read_other_state_file(const char* data_directory) {
  // This server's own state file is the one whose bound is in question: a
  // copy of it that an operator put back is older than this data directory.
  struct stat own, named;
  if (stat(".", &own) == 0 && stat(data_directory, &named) == 0 && own.st_dev == named.st_dev &&
      own.st_ino == named.st_ino) {
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
             errmsg("\"%s\" is this server's own data directory", data_directory),
             errdetail("snowflake_restore_bound() takes the bound of another data directory, the "
                       "one this one was upgraded or copied from; this server's own "
                       "pg_snowflake/state cannot vouch for its data."),
             errhint("Name the data directory this one was upgraded or copied from, if it was; "
                     "else give a time later than the last ID this node may have issued: "
                     "SELECT snowflake_set_bound('...').")));
  }
  char path[MAXPGPATH];
  snprintf(path, sizeof(path), "%s/%s", data_directory, kStatePath);
  StateFile file;
  bound::Unread why;
  char problem[128];
  if (!read_state(path, &file, &why, problem, sizeof(problem))) {
    if (why == bound::Unread::kMissing) {
      ereport(
          ERROR,
          (errcode(ERRCODE_UNDEFINED_FILE), errmsg("there is no snowflake state file \"%s\"", path),
           errdetail("A data directory has one once it has issued a snowflake ID, or once "
                     "CREATE EXTENSION snowflake ran in it with the library preloaded."),
           errhint("Name the data directory this one was upgraded or copied from. If that "
                   "one never issued IDs either, SELECT snowflake_set_bound(now()).")));
    }
    ereport(ERROR,
            (why == bound::Unread::kDamaged ? errcode(ERRCODE_DATA_CORRUPTED)
                                            : errcode_for_file_access(),
             errmsg("snowflake state file \"%s\" %s", path, problem),
             errdetail("Its bound cannot be taken; a copy of it from a backup would be older "
                       "than that data directory, and could be below its IDs."),
             why == bound::Unread::kDamaged
                 ? errhint("Give a time later than the last ID either data directory may have "
                           "issued: SELECT snowflake_set_bound('...').")
                 : errhint("Make the file readable by the server's operating system user, or "
                           "give a time later than the last ID either data directory may have "
                           "issued: SELECT snowflake_set_bound('...').")));
  }
  // Its own bound unknown, its state file does not cover its data either.
  snprintf(path, sizeof(path), "%s/%s", data_directory, kUnknownMarksPath);
  if (access(path, F_OK) == 0) {
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("the bound in data directory \"%s\" is unknown too", data_directory),
             errdetail("It has \"%s\": its state file does not cover every ID its data may hold.",
                       path),
             errhint("Give this node the time of the last ID either may have issued: SELECT "
                     "snowflake_set_bound('...').")));
  }
  return file.id_bound;
}

bool state_file_exists() {
  return access(kStatePath, F_OK) == 0;
}
}  // namespace snowflake::pg
