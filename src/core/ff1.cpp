// FF1 of NIST SP 800-38G (see ff1.hpp).
#include "ff1.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstring>

namespace snowflake::ff1 {

namespace {

constexpr std::size_t kBlock = 16;
constexpr int kRounds = 10;

// The longest half (v), its number in bytes (b <= 2v: log2(radix) <= 16) and
// the bytes of S (d = 4 * ceil(b / 4) + 4).
constexpr std::size_t kMaxHalf = (kMaxLength + 1) / 2;
constexpr std::size_t kMaxNumberBytes = 2 * kMaxHalf;
constexpr std::size_t kMaxS = kMaxNumberBytes + 8;
constexpr std::size_t kMaxLimbs = kMaxS / 4 + 2;
// Q's last blocks: what is left of T and its zeros (< 16), [i], NUM(B).
constexpr std::size_t kMaxTail = kBlock + 1 + kMaxNumberBytes;

// A natural number in 32-bit limbs, least significant first.
struct Number {
  uint32_t limbs[kMaxLimbs];
  std::size_t size = 0;  // limbs in use; the top one may be zero

  void multiply_add(uint32_t factor, uint32_t addend) noexcept {
    uint64_t carry = addend;
    for (std::size_t i = 0; i < size; i++) {
      const uint64_t product = uint64_t{limbs[i]} * factor + carry;
      limbs[i] = static_cast<uint32_t>(product);
      carry = product >> 32;
    }
    if (carry != 0) limbs[size++] = static_cast<uint32_t>(carry);
  }

  // Divides by `divisor` (at most 2^16) and returns the remainder.
  uint32_t divide(uint32_t divisor) noexcept {
    uint64_t remainder = 0;
    for (std::size_t i = size; i-- > 0;) {
      const uint64_t current = remainder << 32 | limbs[i];
      limbs[i] = static_cast<uint32_t>(current / divisor);
      remainder = current % divisor;
    }
    while (size > 0 && limbs[size - 1] == 0) size--;
    return static_cast<uint32_t>(remainder);
  }

  // NUM(X) of the big-endian bytes X (SP 800-38G, section 4.5).
  void set_bytes(const uint8_t* bytes, std::size_t length) noexcept {
    size = (length + 3) / 4;
    std::memset(limbs, 0, size * sizeof(limbs[0]));
    for (std::size_t k = 0; k < length; k++)
      limbs[k / 4] |= uint32_t{bytes[length - 1 - k]} << (8 * (k % 4));
  }

  // [x]^length: the low `length` bytes, big-endian.
  void get_bytes(uint8_t* bytes, std::size_t length) const noexcept {
    for (std::size_t k = 0; k < length; k++) {
      const uint32_t limb = k / 4 < size ? limbs[k / 4] : 0;
      bytes[length - 1 - k] = static_cast<uint8_t>(limb >> (8 * (k % 4)));
    }
  }

  std::size_t bit_length() const noexcept {
    std::size_t top = size;
    while (top > 0 && limbs[top - 1] == 0) top--;
    if (top == 0) return 0;
    std::size_t bits = (top - 1) * 32;
    for (uint32_t limb = limbs[top - 1]; limb != 0; limb >>= 1) bits++;
    return bits;
  }
};

// b = ceil(ceil(v * log2(radix)) / 8): the bytes of the largest NUM of v
// numerals. For a power of two v * log2(radix) is whole; otherwise it is not,
// and its ceiling is the bit length of radix^v.
std::size_t number_bytes(uint32_t radix, std::size_t v) noexcept {
  std::size_t bits;
  if ((radix & (radix - 1)) == 0) {
    std::size_t log2_radix = 0;
    while ((uint32_t{1} << log2_radix) < radix) log2_radix++;
    bits = v * log2_radix;
  } else {
    Number power;
    power.limbs[0] = 1;
    power.size = 1;
    for (std::size_t i = 0; i < v; i++) power.multiply_add(radix, 0);
    bits = power.bit_length();
  }
  return (bits + 7) / 8;
}

// radix^length >= 1,000,000 and length >= 2 (minlen).
bool long_enough(uint32_t radix, std::size_t length) noexcept {
  if (length < 2) return false;
  uint64_t domain = 1;
  for (std::size_t i = 0; i < length && domain < kMinDomain; i++) domain *= radix;
  return domain >= kMinDomain;
}

void xor_block(uint8_t* target, const uint8_t* source) noexcept {
  for (std::size_t i = 0; i < kBlock; i++) target[i] ^= source[i];
}

// The PRF's state after P and the blocks of Q that are the same in every
// round (T and its zeros, up to the last whole block before [i]), and the
// rest of Q's constant bytes at the start of `tail`. Q's varying part,
// [i]^1 || [NUM(B)]^b, follows at tail + rest; rest + 1 + b is a multiple of 16.
struct Prefix {
  uint8_t state[kBlock];
  std::size_t rest;
};

}  // namespace

const char* status_name(Status status) noexcept {
  switch (status) {
    case Status::kOk:
      return "kOk";
    case Status::kInvalidKeyLength:
      return "kInvalidKeyLength";
    case Status::kNoKey:
      return "kNoKey";
    case Status::kInvalidRadix:
      return "kInvalidRadix";
    case Status::kTooShort:
      return "kTooShort";
    case Status::kTooLong:
      return "kTooLong";
    case Status::kInvalidNumeral:
      return "kInvalidNumeral";
    case Status::kTweakTooLong:
      return "kTweakTooLong";
    case Status::kCryptoFailure:
      return "kCryptoFailure";
  }
  return "Status(unknown)";
}

void wipe(void* data, std::size_t length) noexcept {
  OPENSSL_cleanse(data, length);
}

Cipher::~Cipher() {
  clear();
}

Cipher::Cipher(Cipher&& other) noexcept : context_(other.context_) {
  other.context_ = nullptr;
}

Cipher& Cipher::operator=(Cipher&& other) noexcept {
  if (this != &other) {
    clear();
    context_ = other.context_;
    other.context_ = nullptr;
  }
  return *this;
}

void Cipher::clear() noexcept {
  EVP_CIPHER_CTX_free(context_);  // OpenSSL wipes the key schedule
  context_ = nullptr;
}

Status Cipher::set_key(const uint8_t* key, std::size_t length) noexcept {
  const EVP_CIPHER* type = length == 16   ? EVP_aes_128_ecb()
                           : length == 24 ? EVP_aes_192_ecb()
                           : length == 32 ? EVP_aes_256_ecb()
                                          : nullptr;
  if (type == nullptr) return Status::kInvalidKeyLength;
  EVP_CIPHER_CTX* context = EVP_CIPHER_CTX_new();
  if (context == nullptr) return Status::kCryptoFailure;
  if (EVP_EncryptInit_ex(context, type, nullptr, key, nullptr) != 1 ||
      EVP_CIPHER_CTX_set_padding(context, 0) != 1) {
    EVP_CIPHER_CTX_free(context);
    return Status::kCryptoFailure;
  }
  clear();
  context_ = context;
  return Status::kOk;
}

bool Cipher::encrypt_blocks(const uint8_t* in, uint8_t* out, std::size_t blocks) const noexcept {
  const int length = static_cast<int>(blocks * kBlock);
  int written = 0;
  return EVP_EncryptUpdate(context_, out, &written, in, length) == 1 && written == length;
}

namespace {

// Absorbs P and Q's constant whole blocks into prefix->state, and copies the
// rest of Q's constant bytes to `tail`. False if AES failed.
template <typename EncryptBlocks>
bool absorb_prefix(EncryptBlocks&& encrypt_blocks, uint32_t radix, std::size_t u, std::size_t n,
                   const uint8_t* tweak, std::size_t t, std::size_t b, Prefix* prefix,
                   uint8_t* tail) noexcept {
  const uint8_t p[kBlock] = {1,
                             2,
                             1,
                             static_cast<uint8_t>(radix >> 16),
                             static_cast<uint8_t>(radix >> 8),
                             static_cast<uint8_t>(radix),
                             10,
                             static_cast<uint8_t>(u),
                             static_cast<uint8_t>(n >> 24),
                             static_cast<uint8_t>(n >> 16),
                             static_cast<uint8_t>(n >> 8),
                             static_cast<uint8_t>(n),
                             static_cast<uint8_t>(t >> 24),
                             static_cast<uint8_t>(t >> 16),
                             static_cast<uint8_t>(t >> 8),
                             static_cast<uint8_t>(t)};
  if (!encrypt_blocks(p, prefix->state, 1)) return false;
  const std::size_t zeros = (kBlock - (t + b + 1) % kBlock) % kBlock;
  const std::size_t constant = t + zeros;
  const std::size_t whole_blocks = constant / kBlock;
  uint8_t block[kBlock];
  for (std::size_t j = 0; j < whole_blocks; j++) {
    for (std::size_t k = 0; k < kBlock; k++) {
      const std::size_t at = j * kBlock + k;
      block[k] = at < t ? tweak[at] : 0;
    }
    xor_block(prefix->state, block);
    if (!encrypt_blocks(prefix->state, prefix->state, 1)) return false;
  }
  prefix->rest = constant % kBlock;
  for (std::size_t k = 0; k < prefix->rest; k++) {
    const std::size_t at = whole_blocks * kBlock + k;
    tail[k] = at < t ? tweak[at] : 0;
  }
  return true;
}

// R = PRF(P || Q): CBC-MAC from the prefix's state over the tail's blocks.
template <typename EncryptBlocks>
bool mac_tail(EncryptBlocks&& encrypt_blocks, const Prefix& prefix, const uint8_t* tail,
              std::size_t tail_length, uint8_t* r) noexcept {
  std::memcpy(r, prefix.state, kBlock);
  for (std::size_t at = 0; at < tail_length; at += kBlock) {
    xor_block(r, tail + at);
    if (!encrypt_blocks(r, r, 1)) return false;
  }
  return true;
}

}  // namespace

Status Cipher::run(bool decrypting, uint32_t radix, const uint16_t* in, uint16_t* out,
                   std::size_t n, const uint8_t* tweak, std::size_t t) const noexcept {
  if (context_ == nullptr) return Status::kNoKey;
  if (radix < kMinRadix || radix > kMaxRadix) return Status::kInvalidRadix;
  if (n > kMaxLength) return Status::kTooLong;
  if (!long_enough(radix, n)) return Status::kTooShort;
  if (t > 0xFFFFFFFFu) return Status::kTweakTooLong;
  for (std::size_t i = 0; i < n; i++)
    if (in[i] >= radix) return Status::kInvalidNumeral;

  const std::size_t u = n / 2;
  const std::size_t v = n - u;
  const std::size_t b = number_bytes(radix, v);
  const std::size_t d = 4 * ((b + 3) / 4) + 4;
  const std::size_t s_blocks = (d + kBlock - 1) / kBlock;
  const auto aes = [this](const uint8_t* from, uint8_t* to, std::size_t blocks) {
    return encrypt_blocks(from, to, blocks);
  };

  // A, B and C in turn; A and B are the halves before each round.
  uint16_t halves[3][kMaxHalf];
  uint16_t* a = halves[0];
  uint16_t* b_half = halves[1];
  uint16_t* c = halves[2];
  std::size_t a_length = u;
  std::size_t b_length = v;
  std::memcpy(a, in, u * sizeof(uint16_t));
  std::memcpy(b_half, in + u, v * sizeof(uint16_t));

  Prefix prefix;
  uint8_t tail[kMaxTail];
  uint8_t s[kMaxS + kBlock];
  uint8_t counters[kMaxS];
  uint16_t y_numerals[kMaxHalf];
  Number number;
  Status status = Status::kOk;
  if (!absorb_prefix(aes, radix, u, n, tweak, t, b, &prefix, tail)) status = Status::kCryptoFailure;
  const std::size_t tail_length = prefix.rest + 1 + b;

  for (int step = 0; step < kRounds && status == Status::kOk; step++) {
    const int i = decrypting ? kRounds - 1 - step : step;
    // Q's varying part: [i] || [NUM(B)]^b (NUM(A) when decrypting).
    const uint16_t* numerals = decrypting ? a : b_half;
    const std::size_t numerals_length = decrypting ? a_length : b_length;
    number.size = 0;
    for (std::size_t k = 0; k < numerals_length; k++) number.multiply_add(radix, numerals[k]);
    tail[prefix.rest] = static_cast<uint8_t>(i);
    number.get_bytes(tail + prefix.rest + 1, b);
    // R, then S = R || CIPH(R xor [1]^16) || CIPH(R xor [2]^16) || ...
    if (!mac_tail(aes, prefix, tail, tail_length, s)) {
      status = Status::kCryptoFailure;
      break;
    }
    for (std::size_t j = 1; j < s_blocks; j++) {
      uint8_t* block = counters + (j - 1) * kBlock;
      std::memcpy(block, s, kBlock);
      for (std::size_t k = 0; k < 8; k++)
        block[kBlock - 1 - k] ^= static_cast<uint8_t>(static_cast<uint64_t>(j) >> (8 * k));
    }
    if (s_blocks > 1 && !encrypt_blocks(counters, s + kBlock, s_blocks - 1)) {
      status = Status::kCryptoFailure;
      break;
    }
    // y mod radix^m, as m numerals; then c = A + y (B - y when decrypting)
    // mod radix^m, numeral by numeral with a carry.
    const std::size_t m = i % 2 == 0 ? u : v;
    number.set_bytes(s, d);
    for (std::size_t k = m; k-- > 0;) y_numerals[k] = number.size > 0 ? number.divide(radix) : 0;
    const uint16_t* from = decrypting ? b_half : a;
    uint32_t carry = 0;
    for (std::size_t k = m; k-- > 0;) {
      if (!decrypting) {
        uint32_t sum = uint32_t{from[k]} + y_numerals[k] + carry;
        carry = sum >= radix ? 1 : 0;
        c[k] = static_cast<uint16_t>(sum - carry * radix);
      } else {
        const uint32_t subtrahend = uint32_t{y_numerals[k]} + carry;
        carry = from[k] < subtrahend ? 1 : 0;
        c[k] = static_cast<uint16_t>(from[k] + carry * radix - subtrahend);
      }
    }
    uint16_t* freed;
    if (!decrypting) {  // A = B, B = C
      freed = a;
      a = b_half;
      a_length = b_length;
      b_half = c;
      b_length = m;
    } else {  // B = A, A = C
      freed = b_half;
      b_half = a;
      b_length = a_length;
      a = c;
      a_length = m;
    }
    c = freed;
  }
  if (status == Status::kOk) {
    std::memcpy(out, a, a_length * sizeof(uint16_t));
    std::memcpy(out + a_length, b_half, b_length * sizeof(uint16_t));
  }
  wipe(&prefix, sizeof(prefix));
  wipe(s, sizeof(s));
  wipe(counters, sizeof(counters));
  wipe(&number, sizeof(number));
  wipe(y_numerals, sizeof(y_numerals));
  wipe(halves, sizeof(halves));
  return status;
}

Status Cipher::run_binary(bool decrypting, uint64_t value, int bits, const uint8_t* tweak,
                          std::size_t t, uint64_t* out) const noexcept {
  if (context_ == nullptr) return Status::kNoKey;
  if (bits < kMinBinaryLength) return Status::kTooShort;
  if (bits > kMaxBinaryLength) return Status::kTooLong;
  if (bits < 64 && value >> bits != 0) return Status::kInvalidNumeral;
  if (t > 0xFFFFFFFFu) return Status::kTweakTooLong;

  const int u = bits / 2;
  const int v = bits - u;
  const std::size_t b = static_cast<std::size_t>(v + 7) / 8;  // at most 4: d = 8, S = R
  const uint64_t u_mask = (uint64_t{1} << u) - 1;
  const uint64_t v_mask = (uint64_t{1} << v) - 1;
  const auto aes = [this](const uint8_t* from, uint8_t* to, std::size_t blocks) {
    return encrypt_blocks(from, to, blocks);
  };

  Prefix prefix;
  uint8_t tail[kBlock];
  uint8_t r[kBlock];
  Status status = Status::kOk;
  if (!absorb_prefix(aes, 2, static_cast<std::size_t>(u), static_cast<std::size_t>(bits), tweak, t,
                     b, &prefix, tail))
    status = Status::kCryptoFailure;
  // prefix.rest + 1 + b is 16: one block per round.
  uint64_t a = value >> v;
  uint64_t b_half = value & v_mask;
  for (int step = 0; step < kRounds && status == Status::kOk; step++) {
    const int i = decrypting ? kRounds - 1 - step : step;
    const uint64_t numeral = decrypting ? a : b_half;
    tail[prefix.rest] = static_cast<uint8_t>(i);
    for (std::size_t k = 0; k < b; k++)
      tail[kBlock - 1 - k] = static_cast<uint8_t>(numeral >> (8 * k));
    if (!mac_tail(aes, prefix, tail, kBlock, r)) {
      status = Status::kCryptoFailure;
      break;
    }
    uint64_t y = 0;
    for (std::size_t k = 0; k < 8; k++) y = y << 8 | r[k];
    const uint64_t mask = i % 2 == 0 ? u_mask : v_mask;
    if (!decrypting) {
      const uint64_t c = (a + y) & mask;
      a = b_half;
      b_half = c;
    } else {
      const uint64_t c = (b_half - y) & mask;
      b_half = a;
      a = c;
    }
  }
  if (status == Status::kOk) *out = a << v | b_half;
  wipe(&prefix, sizeof(prefix));
  wipe(r, sizeof(r));
  return status;
}

Status Cipher::encrypt(uint32_t radix, const uint16_t* in, uint16_t* out, std::size_t length,
                       const uint8_t* tweak, std::size_t tweak_length) const noexcept {
  return run(false, radix, in, out, length, tweak, tweak_length);
}

Status Cipher::decrypt(uint32_t radix, const uint16_t* in, uint16_t* out, std::size_t length,
                       const uint8_t* tweak, std::size_t tweak_length) const noexcept {
  return run(true, radix, in, out, length, tweak, tweak_length);
}

Status Cipher::encrypt_binary(uint64_t value, int bits, const uint8_t* tweak,
                              std::size_t tweak_length, uint64_t* out) const noexcept {
  return run_binary(false, value, bits, tweak, tweak_length, out);
}

Status Cipher::decrypt_binary(uint64_t value, int bits, const uint8_t* tweak,
                              std::size_t tweak_length, uint64_t* out) const noexcept {
  return run_binary(true, value, bits, tweak, tweak_length, out);
}

}  // namespace snowflake::ff1
