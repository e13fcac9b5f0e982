// Text from outside the server (libpq's messages, a registry's rows) made fit
// for the server log and error messages.
#pragma once

#include <cstddef>

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

}  // namespace snowflake::pg
