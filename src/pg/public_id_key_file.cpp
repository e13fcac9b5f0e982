// The file of the keys of public IDs read into a key set (public_id_key_file.hpp).
//
// Why a file: a setting's value goes where a key must not. PostgreSQL writes
// the new value of a setting changed at reload to the server log ("parameter
// ... changed to ..."), quotes a value it rejects, and shows values in
// pg_file_settings. The setting holds a path, so those places show a path.
// The file (one key a line, core/public_id.hpp) is the server user's alone:
// its owner, or root, may read it, nobody else (the rule of ssl_key_file).
//
// How it is read (public_id_keys.cpp says by whom, and when): before it is
// opened, it is checked with stat(): a regular file (a symbolic link is
// followed), its owner and mode, its size; it is then opened without blocking
// (O_NONBLOCK: a FIFO put there meanwhile opens at once, and fstat() refuses
// it), and checked again, and that it is the same file, once open. A problem
// names a line at fault and why, never what the line holds.
#include "public_id_key_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace snowflake::pg {
namespace {

constexpr off_t kMaxKeyFileBytes = 64 * 1024;
constexpr char kFileHint[] =
    "Write the keys to a file that the server's operating-system user owns and alone can read "
    "(chmod 600), and name it in snowflake.public_id_keys_file (doc/public-ids.md).";
constexpr char kLineHint[] =
    "Each line is a version (one base32 digit: 0-9, A-Z without I, L, O, U) and a key of 32, 48 "
    "or 64 hexadecimal digits, such as `openssl rand -hex 32` writes; # starts a comment.";

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

}  // namespace

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

}  // namespace snowflake::pg
