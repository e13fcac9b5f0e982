// Public IDs in SQL (issue 40, doc/public-ids.md): snowflake_to_public and
// snowflake_from_public, and the keys they use, from the file that
// snowflake.public_id_keys_file names.
//
// Why a file: a setting's value goes where a key must not. PostgreSQL writes
// the new value of a setting changed at reload to the server log ("parameter
// ... changed to ..."), quotes a value it rejects, and shows values in
// pg_file_settings. The setting holds a path, so those places show a path.
// The file (one key a line, public_id.hpp) is the server user's alone: its
// owner, or root, may read it, nobody else (the rule of ssl_key_file).
//
// When it is read: whenever PostgreSQL checks the setting, which it does at
// server start (in the postmaster, whose keys each backend inherits), at every
// reload (in the postmaster and each backend, so editing the file and
// reloading rotates the keys, its path unchanged), in a session that loads the
// library without the preload, and in a parallel worker as it takes its
// leader's settings. A file that cannot be loaded is refused as any invalid
// setting is: at a reload the keys loaded before stay, and the postmaster's
// log line says which line is at fault and why, never what the line holds;
// at server start it stops the server, as a bad ssl_key_file does.
//
// How the keys are kept: the check hook loads the file into `candidate` and
// hands PostgreSQL a generation number as the setting's extra; the assign
// hook that follows moves the candidate's keys into `active` and frees the
// keys they replace (OpenSSL wipes them). The keys are never in an extra,
// which PostgreSQL frees without wiping. Neither ring is ever destroyed by a
// static destructor: at process exit those run after OpenSSL's own cleanup.
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
#include "boundary.hpp"
#include "compat.hpp"
#include "text.hpp"

namespace snowflake::pg {
namespace {

constexpr off_t kMaxKeyFileBytes = 64 * 1024;
constexpr char kFileHint[] =
    "Write the keys to a file that the server's operating-system user owns and alone can read "
    "(chmod 600), and name it in snowflake.public_id_keys_file (doc/public-ids.md).";
constexpr char kLineHint[] =
    "Each line is a version (one base32 digit: 0-9, A-Z without I, L, O, U) and a key of 32, 48 "
    "or 64 hexadecimal digits, such as `openssl rand -hex 32` writes; # starts a comment.";

struct Rings {
  public_id::KeyRing active;
  public_id::KeyRing candidate;
  uint64_t candidate_generation = 0;
};

// Made once per process (inherited by the postmaster's children), never
// destroyed (see the header).
Rings& rings() {
  alignas(Rings) static unsigned char storage[sizeof(Rings)];
  static Rings* made = new (storage) Rings();
  return *made;
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
    case public_id::KeyFileStatus::kCryptoFailure:
      return "OpenSSL refused its key";
    case public_id::KeyFileStatus::kOk:
    case public_id::KeyFileStatus::kNoKey:
      break;
  }
  return "it is not a key line";
}

// Reads the file at `path` into `ring`. No PostgreSQL call (the postmaster
// runs it in a check hook): plain POSIX, and the text wiped before it is freed.
bool load_keys(const char* path, public_id::KeyRing* ring, LoadProblem* problem) {
  problem->hint = kFileHint;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(problem->detail, sizeof(problem->detail), "Could not open the file: %s.",
             strerror(errno));
    return false;
  }
  struct stat status;
  bool ok = false;
  if (fstat(fd, &status) != 0) {
    snprintf(problem->detail, sizeof(problem->detail), "Could not read the file's status: %s.",
             strerror(errno));
  } else if (!S_ISREG(status.st_mode)) {
    snprintf(problem->detail, sizeof(problem->detail), "It is not a regular file.");
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
    ok = true;
  }
  char* text = nullptr;
  std::size_t length = 0;
  if (ok) {
    text = static_cast<char*>(malloc(static_cast<std::size_t>(status.st_size) + 1));
    if (text == nullptr) {
      snprintf(problem->detail, sizeof(problem->detail), "Out of memory.");
      ok = false;
    }
  }
  while (ok && length < static_cast<std::size_t>(status.st_size)) {
    const ssize_t got = read(fd, text + length, static_cast<std::size_t>(status.st_size) - length);
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
    const public_id::KeyFileResult result = public_id::load_key_file(text, length, ring);
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

bool is_set(const char* path) {
  return path != nullptr && path[0] != '\0';
}

// The tweak argument's bytes (none without the argument).
struct Tweak {
  const uint8_t* bytes = nullptr;
  std::size_t length = 0;
};

Tweak tweak_argument(FunctionCallInfo fcinfo, int argno) {
  if (PG_NARGS() <= argno) return {};
  const text* tweak = PG_GETARG_TEXT_PP(argno);
  return {reinterpret_cast<const uint8_t*>(VARDATA_ANY(tweak)),
          static_cast<std::size_t>(VARSIZE_ANY_EXHDR(tweak))};
}

void require_keys() {
  if (likely(!rings().active.empty())) return;
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

void require_decoded(const public_id::DecodeResult& result, const char* text, int length) {
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
      rings().active.describe_versions(versions, sizeof(versions));
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
  Rings& all = rings();
  all.candidate.clear();
  if (!is_set(*newval)) return true;
  LoadProblem problem;
  if (!load_keys(*newval, &all.candidate, &problem)) {
    GUC_check_errdetail("%s", problem.detail);
    GUC_check_errhint("%s", problem.hint);
    return false;
  }
  auto* generation = static_cast<uint64_t*>(compat::guc_extra_alloc(sizeof(uint64_t)));
  if (generation == nullptr) {
    all.candidate.clear();
    return false;
  }
  *generation = ++all.candidate_generation;
  *extra = generation;
  return true;
}

void assign_public_id_keys_file(const char* newval, void* extra) {
  Rings& all = rings();
  if (!is_set(newval) || extra == nullptr) {
    all.active.clear();
    return;
  }
  // The keys the check hook just loaded. Another generation is the extra of
  // keys already active, which PostgreSQL assigns again: nothing changes.
  if (*static_cast<uint64_t*>(extra) != all.candidate_generation || all.candidate.empty()) return;
  std::swap(all.active, all.candidate);
  all.candidate.clear();
}

void require_public_id_keys_at_start() {
  const char* path = GetConfigOption("snowflake.public_id_keys_file", true, false);
  if (!is_set(path)) return;
  LoadProblem problem;
  Rings& all = rings();
  const bool loaded = load_keys(path, &all.candidate, &problem);
  all.candidate.clear();
  if (loaded) return;
  ereport(ERROR,
          (errcode(ERRCODE_CONFIG_FILE_ERROR),
           errmsg("could not load the keys of public IDs from snowflake.public_id_keys_file"),
           errdetail("%s", problem.detail), errhint("%s", problem.hint)));
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
  require_keys();
  char digits[public_id::kWidth];
  const snowflake::ff1::Status status =
      public_id::encode(rings().active, id, tweak.bytes, tweak.length, digits);
  if (status != snowflake::ff1::Status::kOk) report_cipher_failure(status);
  PG_RETURN_TEXT_P(cstring_to_text_with_len(digits, sizeof(digits)));
}

SNOWFLAKE_FUNCTION(snowflake_from_public) {
  const text* input = PG_GETARG_TEXT_PP(0);
  const char* characters = VARDATA_ANY(input);
  const int length = VARSIZE_ANY_EXHDR(input);
  const Tweak tweak = tweak_argument(fcinfo, 1);
  require_keys();
  const public_id::DecodeResult result = public_id::decode(
      rings().active, characters, static_cast<std::size_t>(length), tweak.bytes, tweak.length);
  require_decoded(result, characters, length);
  PG_RETURN_INT64(result.id);
}
