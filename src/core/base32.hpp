// Crockford base32 for IDs: a fixed-width text form that sorts like the number
// (the alphabet is in ASCII order), survives JavaScript's 53-bit numbers, and
// reads aloud without ambiguity (no I, L, O, U).
#pragma once

#include <cstddef>
#include <cstdint>

namespace snowflake::base32 {

// 13 digits of 5 bits hold 65 bits: every non-negative int64.
inline constexpr std::size_t kWidth = 13;

// The value (0-31) of one digit, in either case, or of an alias (O reads as 0,
// I and L as 1); -1 for anything else.
int digit_value(char c) noexcept;

// The upper-case digit of `value` (0-31).
char digit(int value) noexcept;

// Writes exactly kWidth upper-case digits (no terminator). Precondition: id >= 0.
void encode(int64_t id, char out[kWidth]) noexcept;

enum class ParseStatus {
  kOk,
  kEmpty,             // no digits
  kTooLong,           // more than kWidth digits
  kInvalidCharacter,  // `position` (0-based) holds a non-digit
  kOutOfRange,        // the value exceeds the largest bigint
};

struct ParseResult {
  ParseStatus status;
  int64_t value;         // kOk
  std::size_t position;  // kInvalidCharacter
};

// Case-insensitive; the Crockford aliases O -> 0 and I, L -> 1 are accepted,
// anything else that is not a digit is rejected. Leading zeros are optional.
ParseResult decode(const char* text, std::size_t length) noexcept;

}  // namespace snowflake::base32
