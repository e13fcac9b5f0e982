// Crockford base32 (see base32.hpp).
#include "base32.hpp"

namespace snowflake::base32 {

namespace {

constexpr char kDigits[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

// The value of a digit or alias, -1 for anything else.
constexpr int value_of_digit(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') c = static_cast<unsigned char>(c - 'a' + 'A');
  switch (c) {
    case 'O':
      return 0;
    case 'I':
    case 'L':
      return 1;
    default:
      break;
  }
  for (int value = 10; value < 32; value++)
    if (kDigits[value] == c) return value;
  return -1;
}

// value_of_digit of every byte, looked up rather than searched: decoding a
// public ID reads 27 digits.
struct DigitTable {
  int8_t values[256];
};

constexpr DigitTable make_digit_table() {
  DigitTable table{};
  for (int c = 0; c < 256; c++)
    table.values[c] = static_cast<int8_t>(value_of_digit(static_cast<unsigned char>(c)));
  return table;
}

constexpr DigitTable kDigitTable = make_digit_table();

}  // namespace

int digit_value(char c) noexcept {
  return kDigitTable.values[static_cast<unsigned char>(c)];
}

char digit(int value) noexcept {
  return kDigits[value & 31];
}

void encode(int64_t id, char out[kWidth]) noexcept {
  auto bits = static_cast<uint64_t>(id);
  for (std::size_t i = kWidth; i-- > 0;) {
    out[i] = kDigits[bits & 31];
    bits >>= 5;
  }
}

ParseResult decode(const char* text, std::size_t length) noexcept {
  if (length == 0) return {ParseStatus::kEmpty, 0, 0};
  if (length > kWidth) return {ParseStatus::kTooLong, 0, 0};
  uint64_t value = 0;
  for (std::size_t i = 0; i < length; i++) {
    const int digit = digit_value(text[i]);
    if (digit < 0) return {ParseStatus::kInvalidCharacter, 0, i};
    value = value << 5 | static_cast<uint64_t>(digit);
  }
  // 13 digits hold 65 bits: the top two (the first digit above 7) overflow.
  if (length == kWidth && digit_value(text[0]) > 7) return {ParseStatus::kOutOfRange, 0, 0};
  return {ParseStatus::kOk, static_cast<int64_t>(value), 0};
}

}  // namespace snowflake::base32
