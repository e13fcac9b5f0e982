// libFuzzer target: Crockford base32 (src/core/base32.*).
//
// Any bytes go to decode(). What it accepts must be the value an independent
// reading of the digits gives (128-bit arithmetic), encode back to the
// canonical 13 digits of the input (upper case, aliases resolved, zeros in
// front) and decode to the same value; what it refuses must be refused for the
// reason it gives. The first 16 bytes, read as two IDs, must encode in the
// order of their values.
#include <cstdint>
#include <cstring>

#include "base32.hpp"
#include "fuzz_check.hpp"

namespace {

using snowflake::base32::decode;
using snowflake::base32::encode;
using snowflake::base32::kWidth;
using snowflake::base32::ParseStatus;

// The reference alphabet, written out: the value of each digit and alias.
int reference_digit(unsigned char c) {
  static const char kAlphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  if (c == 'O' || c == 'o') return 0;
  if (c == 'I' || c == 'i' || c == 'L' || c == 'l') return 1;
  const unsigned char upper = (c >= 'a' && c <= 'z') ? static_cast<unsigned char>(c - 32) : c;
  for (int value = 0; value < 32; value++)
    if (kAlphabet[value] == upper && upper != '\0') return value;
  return -1;
}

void check_order(int64_t a, int64_t b) {
  a &= INT64_MAX;  // encode takes IDs >= 0
  b &= INT64_MAX;
  char text_a[kWidth];
  char text_b[kWidth];
  encode(a, text_a);
  encode(b, text_b);
  const int order = std::memcmp(text_a, text_b, kWidth);
  FUZZ_CHECK((order < 0) == (a < b) && (order == 0) == (a == b));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* text = reinterpret_cast<const char*>(data);
  const snowflake::base32::ParseResult result = decode(text, size);

  int first_invalid = -1;
  unsigned __int128 reference = 0;
  for (size_t i = 0; i < size && i < kWidth; i++) {
    const int digit = reference_digit(data[i]);
    if (digit < 0) {
      first_invalid = static_cast<int>(i);
      break;
    }
    reference = reference << 5 | static_cast<unsigned>(digit);
  }

  switch (result.status) {
    case ParseStatus::kEmpty:
      FUZZ_CHECK(size == 0);
      break;
    case ParseStatus::kTooLong:
      FUZZ_CHECK(size > kWidth);
      break;
    case ParseStatus::kInvalidCharacter:
      FUZZ_CHECK(size <= kWidth && first_invalid >= 0);
      FUZZ_CHECK(result.position == static_cast<size_t>(first_invalid));
      break;
    case ParseStatus::kOutOfRange:
      FUZZ_CHECK(size == kWidth && first_invalid < 0);
      FUZZ_CHECK(reference > static_cast<unsigned __int128>(INT64_MAX));
      break;
    case ParseStatus::kOk: {
      FUZZ_CHECK(size >= 1 && size <= kWidth && first_invalid < 0);
      FUZZ_CHECK(reference <= static_cast<unsigned __int128>(INT64_MAX));
      FUZZ_CHECK(result.value == static_cast<int64_t>(reference));
      char canonical[kWidth];
      encode(result.value, canonical);
      // The input in canonical form: zeros in front, each digit as encode writes it.
      for (size_t i = 0; i < kWidth; i++) {
        const size_t pad = kWidth - size;
        const int digit = i < pad ? 0 : reference_digit(data[i - pad]);
        FUZZ_CHECK(canonical[i] == "0123456789ABCDEFGHJKMNPQRSTVWXYZ"[digit]);
      }
      const snowflake::base32::ParseResult again = decode(canonical, kWidth);
      FUZZ_CHECK(again.status == ParseStatus::kOk && again.value == result.value);
      break;
    }
  }

  if (size >= 16) {
    int64_t a;
    int64_t b;
    std::memcpy(&a, data, sizeof a);
    std::memcpy(&b, data + 8, sizeof b);
    check_order(a, b);
  }
  return 0;
}
