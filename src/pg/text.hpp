// Text from outside the server (libpq's messages, a registry's rows, the
// arguments of SQL functions) made fit for the server log and error messages.
#pragma once

#include <cstddef>

#include "postgres.hpp"

namespace snowflake::pg {

// Printable ASCII on one line (line breaks become spaces), no trailing space,
// cut to fit `size` with its terminating zero. A null `source` gives "".
inline void copy_printable(char* target, size_t size, const char* source) {
  size_t length = 0;
  for (size_t i = 0; source != nullptr && source[i] != '\0' && length + 1 < size; i++) {
    const unsigned char c = static_cast<unsigned char>(source[i]);
    if (c == '\n' || c == '\r' || c == '\t') {
      if (length > 0 && target[length - 1] != ' ') target[length++] = ' ';
    } else {
      target[length++] = c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
    }
  }
  while (length > 0 && target[length - 1] == ' ') length--;
  target[length] = '\0';
}

// `text` (`length` bytes, the server's encoding), quoted in a message: at most
// 64 characters, then "...", so that a large argument never becomes a large
// message and log line. palloc'd.
inline const char* quoted_text(const char* text, std::size_t length) {
  constexpr int kQuotedCharacters = 64;
  const int limit = pg_mbcharcliplen(text, static_cast<int>(length), kQuotedCharacters);
  if (static_cast<std::size_t>(limit) >= length) return pnstrdup(text, length);
  return psprintf("%s...", pnstrdup(text, limit));
}

// The error for a text of Crockford base32 digits (`what`: "invalid public
// ID") whose byte `position` of `text` is no digit; `shown` quotes the text.
[[noreturn]] inline void refuse_base32_character(const char* what, const char* shown,
                                                 const char* text, std::size_t position) {
  const char* at = text + position;
  ereport(ERROR, (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION), errmsg("%s: \"%s\"", what, shown),
                  errdetail("Character %d, \"%s\", is not a Crockford base32 digit.",
                            pg_mbstrlen_with_len(text, static_cast<int>(position)) + 1,
                            pnstrdup(at, pg_mblen(at))),
                  errhint("The digits are 0-9 and A-Z without I, L, O and U, in either case; I and "
                          "L read as 1, O as 0.")));
  pg_unreachable();
}

// `clause` with its first letter capitalized, to begin a DETAIL. palloc'd.
inline const char* capitalized(const char* clause) {
  char* sentence = pstrdup(clause);
  sentence[0] = pg_toupper(static_cast<unsigned char>(sentence[0]));
  return sentence;
}

}  // namespace snowflake::pg
