// The marks of pg_snowflake/ beside the state file (marks.hpp): the vouches
// of creations and the marks of an unknown bound. Each vouch is a file of its
// own, written once by the backend that created the extension; a mark is a
// line appended to pg_snowflake/unknown and fsynced before the caller goes
// on.
#include "marks.hpp"

#include <algorithm>
#include <cerrno>

#include "state_file.hpp"

namespace snowflake::pg {

bool append_unknown_mark(const char* clause, const char* databases, int elevel) {
  if (!make_state_directory(elevel)) return false;
  const int fd = OpenTransientFile(kUnknownMarksPath, O_CREAT | O_WRONLY | O_APPEND | PG_BINARY);
  if (fd < 0) {
    ereport(elevel, (errcode_for_file_access(),
                     errmsg("could not open file \"%s\": %m", kUnknownMarksPath)));
    return false;
  }
  char line[kUnknownMarkMax];
  const int length = snprintf(line, sizeof(line), "%s\t%s\n", clause, databases);
  const size_t wanted = std::min(static_cast<size_t>(length), sizeof(line) - 1);
  line[wanted - 1] = '\n';  // cut short, a mark still ends its line
  errno = 0;
  const bool written = write(fd, line, wanted) == static_cast<ssize_t>(wanted);
  if (!written && errno == 0) errno = ENOSPC;
  const bool synced = written && pg_fsync(fd) == 0;
  const int saved_errno = errno;
  CloseTransientFile(fd);
  if (!synced) {
    errno = saved_errno;
    ereport(elevel,
            (errcode_for_file_access(), errmsg("could not %s file \"%s\": %m",
                                               written ? "fsync" : "write", kUnknownMarksPath)));
    return false;
  }
  return fsync_fname_ext(kStateDirectory, true, false, elevel) == 0;
}

// Each mark is "clause<TAB>databases"; marks of one clause are said once,
// with their databases listed in its %s.
bool read_unknown_marks(char* out, size_t size) {
  const int fd = OpenTransientFile(kUnknownMarksPath, O_RDONLY | PG_BINARY);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    // Unreadable marks still mark the bound unknown.
    strlcpy(out, "pg_snowflake/unknown cannot be read", size);
    return true;
  }
  char text[4 * kUnknownMarkMax];
  const ssize_t got = read(fd, text, sizeof(text) - 1);
  CloseTransientFile(fd);
  text[std::max<ssize_t>(got, 0)] = '\0';
  constexpr int kClauses = 8;
  const char* clauses[kClauses];
  char databases[kClauses][kUnknownMarkMax];
  int count = 0;
  char* next = text;
  for (char* line = strsep(&next, "\n"); line != nullptr; line = strsep(&next, "\n")) {
    char* names = strchr(line, '\t');
    if (names == nullptr) continue;
    *names++ = '\0';
    int i = 0;
    while (i < count && strcmp(clauses[i], line) != 0) i++;
    if (i == count) {
      if (count == kClauses) continue;
      clauses[count] = line;
      databases[count++][0] = '\0';
    }
    if (strstr(databases[i], names) != nullptr) continue;
    if (databases[i][0] != '\0') strlcat(databases[i], ", ", sizeof(databases[i]));
    strlcat(databases[i], names, sizeof(databases[i]));
  }
  out[0] = '\0';
  for (int i = 0; i < count; i++) {
    if (i > 0) strlcat(out, "; ", size);
    const char* hole = strstr(clauses[i], "%s");
    const size_t before =
        hole != nullptr ? static_cast<size_t>(hole - clauses[i]) : strlen(clauses[i]);
    const size_t used = strlen(out);
    if (used + before < size) {
      memcpy(out + used, clauses[i], before);
      out[used + before] = '\0';
    }
    if (hole == nullptr) continue;
    strlcat(out, databases[i], size);
    strlcat(out, hole + 2, size);
  }
  if (out[0] == '\0') strlcpy(out, "pg_snowflake/unknown marks it unknown", size);
  return true;
}

void remove_unknown_marks(int elevel) {
  remove_state_entry(kUnknownMarksPath, elevel);
}
// A vouch is the empty file pg_snowflake/created.<database>.<extension>
// (OIDs): a copy or a pg_upgrade that skips pg_snowflake/ has none.
constexpr char kVouchPrefix[] = "created.";

void vouch_for_creation(Oid database, Oid extension) {
  char path[MAXPGPATH];
  snprintf(path, sizeof(path), "%s/%s%u.%u", kStateDirectory, kVouchPrefix, database, extension);
  if (!make_state_directory(WARNING)) return;
  const int fd = OpenTransientFile(path, O_CREAT | O_WRONLY | PG_BINARY);
  if (fd < 0) {
    ereport(WARNING, (errcode_for_file_access(), errmsg("could not create file \"%s\": %m", path)));
    return;
  }
  const bool synced = pg_fsync(fd) == 0;
  CloseTransientFile(fd);
  if (!synced) {
    ereport(WARNING, (errcode_for_file_access(), errmsg("could not fsync file \"%s\": %m", path)));
    return;
  }
  // The new entry durable too.
  (void)fsync_fname_ext(kStateDirectory, true, false, WARNING);
}

bool vouched(Oid extension) {
  char suffix[16];
  snprintf(suffix, sizeof(suffix), ".%u", extension);
  DIR* directory = AllocateDir(kStateDirectory);
  if (directory == nullptr) return false;  // no pg_snowflake/: no vouch at all
  const size_t prefix_length = strlen(kVouchPrefix);
  bool found = false;
  struct dirent* entry;
  while (!found && (entry = ReadDirExtended(directory, kStateDirectory, LOG)) != nullptr) {
    // created.<database>.<extension>: the extension's OID follows the second dot.
    if (strncmp(entry->d_name, kVouchPrefix, prefix_length) != 0) continue;
    const char* second_dot = strchr(entry->d_name + prefix_length, '.');
    found = second_dot != nullptr && strcmp(second_dot, suffix) == 0;
  }
  FreeDir(directory);
  return found;
}

void remove_vouches(int elevel) {
  DIR* directory = AllocateDir(kStateDirectory);
  if (directory == nullptr) return;
  bool removed = false;
  struct dirent* entry;
  while ((entry = ReadDirExtended(directory, kStateDirectory, elevel)) != nullptr) {
    if (strncmp(entry->d_name, kVouchPrefix, strlen(kVouchPrefix)) != 0) continue;
    char path[MAXPGPATH];
    snprintf(path, sizeof(path), "%s/%s", kStateDirectory, entry->d_name);
    if (unlink(path) != 0 && errno != ENOENT) {
      ereport(elevel,
              (errcode_for_file_access(), errmsg("could not remove file \"%s\": %m", path)));
    }
    removed = true;
  }
  FreeDir(directory);
  if (removed) (void)fsync_fname_ext(kStateDirectory, true, false, elevel);
}

}  // namespace snowflake::pg
