// FF1, the format-preserving encryption of NIST SP 800-38G (Rev. 1), with AES
// from OpenSSL's libcrypto: a keyed permutation of the numeral strings of a
// given radix and length, reversible by whoever holds the key. Public IDs
// (public_id.hpp) use it on the 63 bits of a non-negative bigint.
//
// Two ways in, one algorithm:
// - encrypt/decrypt: any radix from 2 to 2^16 and any length from the
//   standard's minlen (radix^n >= 1,000,000) to kMaxLength, as the standard
//   lets an implementation choose its maxlen; numerals most significant first.
// - encrypt_binary/decrypt_binary: radix 2 and a length of 20 to 64, the
//   numeral string being the bits of an integer. The same FF1 (unit tests
//   compare the two on random inputs) with its arithmetic in one machine word:
//   no big numbers, no allocation, one AES block per round.
//
// The PRF is the standard's CBC-MAC with a zero IV, computed block by block
// with AES-ECB; P and the part of Q that does not change between rounds are
// encrypted once per call, so a round costs one AES block (more only when
// the numbers exceed 11 bytes). Nothing here throws; every outcome is a
// Status. The expanded key lives in OpenSSL's context, which OpenSSL wipes
// when it is freed; the PRF's outputs are wiped before each call returns.
// A Cipher serves one thread at a time (a PostgreSQL backend is one).
#pragma once

#include <cstddef>
#include <cstdint>

struct evp_cipher_ctx_st;  // OpenSSL's EVP_CIPHER_CTX

namespace snowflake::ff1 {

inline constexpr uint32_t kMinRadix = 2;
inline constexpr uint32_t kMaxRadix = uint32_t{1} << 16;
// This implementation's maxlen (the standard allows up to 2^32 - 1): the
// numbers of a round then fit in fixed buffers on the stack.
inline constexpr std::size_t kMaxLength = 1024;
// radix^minlen >= kMinDomain (SP 800-38G Rev. 1, section 5.2).
inline constexpr uint64_t kMinDomain = 1000000;
inline constexpr int kMinBinaryLength = 20;  // 2^20 >= 1,000,000
inline constexpr int kMaxBinaryLength = 64;

enum class Status {
  kOk,
  kInvalidKeyLength,  // not 16, 24 or 32 bytes (AES-128, -192, -256)
  kNoKey,             // the Cipher has no key yet
  kInvalidRadix,      // outside 2..2^16
  kTooShort,          // radix^length < 1,000,000, or length < 2
  kTooLong,           // length > kMaxLength (kMaxBinaryLength for the binary form)
  kInvalidNumeral,    // a numeral >= radix, or a value >= 2^length
  kTweakTooLong,      // 2^32 bytes or more
  kCryptoFailure,     // OpenSSL refused (out of memory, AES unavailable)
};

const char* status_name(Status status) noexcept;

class Cipher {
 public:
  Cipher() noexcept = default;
  ~Cipher();
  Cipher(Cipher&& other) noexcept;
  Cipher& operator=(Cipher&& other) noexcept;
  Cipher(const Cipher&) = delete;
  Cipher& operator=(const Cipher&) = delete;

  // Takes an AES key of 16, 24 or 32 bytes; the caller wipes its own copy.
  // Replaces any key set before.
  Status set_key(const uint8_t* key, std::size_t length) noexcept;
  bool has_key() const noexcept { return context_ != nullptr; }
  // Frees the key (OpenSSL wipes it).
  void clear() noexcept;

  // FF1.Encrypt and FF1.Decrypt (Algorithms 7 and 8) of the `length` numerals
  // at `in` into `out` (which may be `in`), under `tweak`.
  Status encrypt(uint32_t radix, const uint16_t* in, uint16_t* out, std::size_t length,
                 const uint8_t* tweak, std::size_t tweak_length) const noexcept;
  Status decrypt(uint32_t radix, const uint16_t* in, uint16_t* out, std::size_t length,
                 const uint8_t* tweak, std::size_t tweak_length) const noexcept;

  // The same with radix 2 over the `bits` low bits of `value` (20 to 64), the
  // most significant bit first; `*out` gets the result's bits.
  Status encrypt_binary(uint64_t value, int bits, const uint8_t* tweak, std::size_t tweak_length,
                        uint64_t* out) const noexcept;
  Status decrypt_binary(uint64_t value, int bits, const uint8_t* tweak, std::size_t tweak_length,
                        uint64_t* out) const noexcept;

 private:
  // AES-ECB of `blocks` 16-byte blocks; false if OpenSSL refused.
  bool encrypt_blocks(const uint8_t* in, uint8_t* out, std::size_t blocks) const noexcept;
  Status run(bool decrypting, uint32_t radix, const uint16_t* in, uint16_t* out, std::size_t length,
             const uint8_t* tweak, std::size_t tweak_length) const noexcept;
  Status run_binary(bool decrypting, uint64_t value, int bits, const uint8_t* tweak,
                    std::size_t tweak_length, uint64_t* out) const noexcept;

  evp_cipher_ctx_st* context_ = nullptr;
};

// Overwrites `length` bytes at `data` with zeros in a way the compiler keeps
// (OPENSSL_cleanse), for key material outside a Cipher.
void wipe(void* data, std::size_t length) noexcept;

}  // namespace snowflake::ff1
