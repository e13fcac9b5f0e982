// Public IDs: an ID shown outside without telling when, where and how many
// (issue 40, doc/public-ids.md).
//
// The text is 14 characters: a key version, one Crockford base32 digit, then
// the 13 digits (base32.hpp) of FF1 (ff1.hpp) of the ID's 63 bits, under that
// version's key and the caller's tweak. FF1 of radix 2 over 63 bits is a
// permutation of the non-negative bigints, so no two IDs share a text, and
// none needs storing: the key turns one into the other both ways.
//
// Keys rotate: a KeyRing holds a key per version; the current one encodes,
// every one decodes, so texts handed out under an older key keep working as
// long as that key stays in the ring. A text decodes if its version has a key
// and its 13 digits are at most 2^63 - 1; any such text decodes to some ID:
// the form hides the ID, it authenticates nothing.
//
// A key file is parsed into a KeySet, its keys as bytes, from which a KeyRing
// is made: the bytes are what one process hands to another
// (published_keys.hpp), the ring is what encodes and decodes.
//
// The tweak is bytes; the glue passes a text tweak as UTF-8, whatever the
// database's encoding, so that the same ID, key and tweak give the same text
// in every database.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base32.hpp"
#include "ff1.hpp"

namespace snowflake::public_id {

inline constexpr std::size_t kWidth = 1 + base32::kWidth;
inline constexpr int kVersions = 32;  // one per base32 digit
inline constexpr int kIdBits = 63;
inline constexpr std::size_t kMaxKeyBytes = 32;  // AES-256

// The keys of a key file as bytes, by version. Plain data, copied as such;
// clear() wipes it, and whoever holds one clears it before dropping it.
struct KeySet {
  uint8_t key[kVersions][kMaxKeyBytes] = {};
  uint8_t length[kVersions] = {};  // 0: no key of that version; else 16, 24 or 32
  int current = -1;                // the version that encodes; -1: no key

  bool empty() const noexcept { return current < 0; }
  // Wipes every key.
  void clear() noexcept;
};

// Whether two sets hold the same keys under the same versions, the same one
// current.
bool same_keys(const KeySet& a, const KeySet& b) noexcept;

struct KeyRing {
  ff1::Cipher keys[kVersions];  // by version (the digit's value)
  int current = -1;             // the version that encodes; -1: no key

  bool empty() const noexcept { return current < 0; }
  int count() const noexcept;
  // Frees every key (OpenSSL wipes them).
  void clear() noexcept;
  // Makes the ring of `keys`, clearing it first. kOk, or what OpenSSL refused
  // (`*version` names the key), the ring then left empty.
  ff1::Status load(const KeySet& keys, int* version) noexcept;
  // The versions as text, "A, B" (at most 3 * kVersions bytes), for messages.
  void describe_versions(char* out, std::size_t size) const noexcept;
};

// A key file: one key a line, "VERSION KEY", where VERSION is one base32
// digit (its canonical form: not the aliases I, L, O) and KEY is 32, 48 or 64
// hexadecimal digits (AES-128, -192, -256). Blank lines and text after '#'
// are ignored. Every key decodes; the last one listed encodes.
enum class KeyFileStatus {
  kOk,
  kNoKey,             // no key line at all
  kBadVersion,        // the first word is not one base32 digit
  kDuplicateVersion,  // a version listed twice
  kMissingKey,        // a version without a key
  kBadKey,            // the key is not 32, 48 or 64 hexadecimal digits
  kExtraText,         // more than two words on a line
  kCryptoFailure,     // OpenSSL refused a key (load_key_file only)
};

struct KeyFileResult {
  KeyFileStatus status;
  int line;  // 1-based, of the fault; 0 for kOk and kNoKey
};

// Parses the file's text into `keys`, which it clears first; on a fault the
// set is left empty. The result names the line of a fault, never its text,
// which may hold a key. No OpenSSL call; `text` is the caller's to wipe.
KeyFileResult parse_key_file(const char* text, std::size_t length, KeySet* keys) noexcept;

// parse_key_file, then KeyRing::load (kCryptoFailure, line 0, if OpenSSL
// refuses a key); wipes the bytes it parsed.
KeyFileResult load_key_file(const char* text, std::size_t length, KeyRing* ring) noexcept;

// Writes the kWidth characters of the public ID of `id` (>= 0) under the
// ring's current key. kNoKey if the ring is empty.
ff1::Status encode(const KeyRing& ring, int64_t id, const uint8_t* tweak, std::size_t tweak_length,
                   char out[kWidth]) noexcept;

enum class DecodeStatus {
  kOk,
  kNoKey,             // the ring is empty
  kInvalidCharacter,  // `position` holds a non-digit (checked before the length)
  kWrongLength,       // not kWidth characters
  kUnknownVersion,    // no key of `version` in the ring
  kOutOfRange,        // the digits exceed 63 bits (the second character is above 7)
  kCipherFailure,     // FF1 failed (`cipher` says why)
};

struct DecodeResult {
  DecodeStatus status;
  int64_t id;            // kOk
  std::size_t position;  // kInvalidCharacter
  int version;           // kOk, kUnknownVersion
  ff1::Status cipher;    // kCipherFailure
};

// Case-insensitive, with base32's aliases (O for 0, I and L for 1).
DecodeResult decode(const KeyRing& ring, const char* text, std::size_t length, const uint8_t* tweak,
                    std::size_t tweak_length) noexcept;

}  // namespace snowflake::public_id
