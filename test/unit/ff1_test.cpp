// FF1 (src/core/ff1): NIST's sample vectors (SP 800-38G, "FF1samples.pdf":
// radix 10 and 36, AES-128, -192 and -256), vectors of radix 2 from an
// independent transcription of the standard (ff1_reference.py, on Python's
// integers), the binary form against the general one, round trips, and the
// refusals.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ff1.hpp"

namespace snowflake::ff1 {

inline void PrintTo(Status status, std::ostream* os) {
  *os << status_name(status);
}

namespace {

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

// Numerals written as digits and lower-case letters (radix up to 36).
std::vector<uint16_t> numerals_of(const std::string& text) {
  std::vector<uint16_t> numerals;
  for (char c : text) numerals.push_back(static_cast<uint16_t>(c <= '9' ? c - '0' : c - 'a' + 10));
  return numerals;
}

std::string text_of(const std::vector<uint16_t>& numerals) {
  std::string text;
  for (uint16_t n : numerals) text += static_cast<char>(n < 10 ? '0' + n : 'a' + n - 10);
  return text;
}

Cipher cipher_with(const std::string& key_hex) {
  Cipher cipher;
  const std::vector<uint8_t> key = from_hex(key_hex);
  EXPECT_EQ(cipher.set_key(key.data(), key.size()), Status::kOk);
  return cipher;
}

const char kKey128[] = "2B7E151628AED2A6ABF7158809CF4F3C";
const char kKey192[] = "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F";
const char kKey256[] = "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94";

struct Sample {
  int number;
  const char* key;
  uint32_t radix;
  const char* tweak;
  const char* plaintext;
  const char* ciphertext;
};

const Sample kSamples[] = {
    {1, kKey128, 10, "", "0123456789", "2433477484"},
    {2, kKey128, 10, "39383736353433323130", "0123456789", "6124200773"},
    {3, kKey128, 36, "3737373770717273373737", "0123456789abcdefghi", "a9tv40mll9kdu509eum"},
    {4, kKey192, 10, "", "0123456789", "2830668132"},
    {5, kKey192, 10, "39383736353433323130", "0123456789", "2496655549"},
    {6, kKey192, 36, "3737373770717273373737", "0123456789abcdefghi", "xbj3kv35jrawxv32ysr"},
    {7, kKey256, 10, "", "0123456789", "6657667009"},
    {8, kKey256, 10, "39383736353433323130", "0123456789", "1001623463"},
    {9, kKey256, 36, "3737373770717273373737", "0123456789abcdefghi", "xs8a0azh2avyalyzuwd"},
};

TEST(Ff1Test, NistSamples) {
  for (const Sample& sample : kSamples) {
    SCOPED_TRACE("FF1 sample " + std::to_string(sample.number));
    const Cipher cipher = cipher_with(sample.key);
    const std::vector<uint8_t> tweak = from_hex(sample.tweak);
    const std::vector<uint16_t> plaintext = numerals_of(sample.plaintext);
    std::vector<uint16_t> ciphertext(plaintext.size());
    ASSERT_EQ(cipher.encrypt(sample.radix, plaintext.data(), ciphertext.data(), plaintext.size(),
                             tweak.data(), tweak.size()),
              Status::kOk);
    EXPECT_EQ(text_of(ciphertext), sample.ciphertext);
    std::vector<uint16_t> decrypted(plaintext.size());
    ASSERT_EQ(cipher.decrypt(sample.radix, ciphertext.data(), decrypted.data(), ciphertext.size(),
                             tweak.data(), tweak.size()),
              Status::kOk);
    EXPECT_EQ(text_of(decrypted), sample.plaintext);
  }
}

// Radix 2 has no NIST sample: these come from test/unit/ff1_reference.py, a
// transcription of Algorithm 7 on Python's integers with the cryptography
// package's AES, written apart from ff1.cpp.
struct BinarySample {
  const char* key;
  const char* tweak;
  int bits;
  uint64_t plaintext;
  uint64_t ciphertext;
};

const BinarySample kBinarySamples[] = {
#include "ff1_reference_vectors.inc"
};

TEST(Ff1Test, RadixTwoMatchesTheReference) {
  for (const BinarySample& sample : kBinarySamples) {
    SCOPED_TRACE(std::to_string(sample.bits) + " bits, plaintext " +
                 std::to_string(sample.plaintext) + ", tweak '" + sample.tweak + "'");
    const Cipher cipher = cipher_with(sample.key);
    const std::vector<uint8_t> tweak = from_hex(sample.tweak);
    uint64_t out = 0;
    ASSERT_EQ(
        cipher.encrypt_binary(sample.plaintext, sample.bits, tweak.data(), tweak.size(), &out),
        Status::kOk);
    EXPECT_EQ(out, sample.ciphertext);
    // The general form, numeral by numeral, agrees.
    std::vector<uint16_t> numerals(static_cast<std::size_t>(sample.bits));
    for (int k = 0; k < sample.bits; k++)
      numerals[static_cast<std::size_t>(k)] =
          static_cast<uint16_t>(sample.plaintext >> (sample.bits - 1 - k) & 1);
    ASSERT_EQ(cipher.encrypt(2, numerals.data(), numerals.data(), numerals.size(), tweak.data(),
                             tweak.size()),
              Status::kOk);
    uint64_t general = 0;
    for (uint16_t bit : numerals) general = general << 1 | bit;
    EXPECT_EQ(general, sample.ciphertext);
  }
}

// The binary form is the general one with radix 2, at every length it takes.
TEST(Ff1Test, BinaryFormEqualsGeneralForm) {
  const Cipher cipher = cipher_with(kKey256);
  std::mt19937_64 random(20240601);
  for (int bits = kMinBinaryLength; bits <= kMaxBinaryLength; bits++) {
    for (int trial = 0; trial < 40; trial++) {
      const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      const uint64_t value = random() & mask;
      std::vector<uint8_t> tweak(random() % 40);
      for (uint8_t& byte : tweak) byte = static_cast<uint8_t>(random());
      uint64_t binary = 0;
      ASSERT_EQ(cipher.encrypt_binary(value, bits, tweak.data(), tweak.size(), &binary),
                Status::kOk);
      std::vector<uint16_t> numerals(static_cast<std::size_t>(bits));
      for (int k = 0; k < bits; k++)
        numerals[static_cast<std::size_t>(k)] = static_cast<uint16_t>(value >> (bits - 1 - k) & 1);
      ASSERT_EQ(cipher.encrypt(2, numerals.data(), numerals.data(), numerals.size(), tweak.data(),
                               tweak.size()),
                Status::kOk);
      uint64_t general = 0;
      for (uint16_t bit : numerals) general = general << 1 | bit;
      ASSERT_EQ(binary, general) << bits << " bits, value " << value;
      uint64_t back = 0;
      ASSERT_EQ(cipher.decrypt_binary(binary, bits, tweak.data(), tweak.size(), &back),
                Status::kOk);
      ASSERT_EQ(back, value);
    }
  }
}

// Round trips at radixes and lengths across the standard's range, the longest
// tweaks and numbers (several blocks of Q and of S) included.
TEST(Ff1Test, RoundTripsAcrossRadixesAndLengths) {
  const Cipher cipher = cipher_with(kKey192);
  std::mt19937_64 random(7);
  const uint32_t radixes[] = {2, 3, 10, 26, 36, 64, 255, 256, 1000, 40000, 65535, 65536};
  for (uint32_t radix : radixes) {
    std::size_t shortest = 2;
    for (uint64_t domain = radix * uint64_t{radix}; domain < kMinDomain; domain *= radix)
      shortest++;
    for (std::size_t length : {shortest, shortest + 1, std::size_t{41}, std::size_t{200},
                               std::size_t{kMaxLength - 1}, std::size_t{kMaxLength}}) {
      if (length < shortest) continue;
      SCOPED_TRACE("radix " + std::to_string(radix) + ", length " + std::to_string(length));
      std::vector<uint16_t> plaintext(length);
      for (uint16_t& numeral : plaintext) numeral = static_cast<uint16_t>(random() % radix);
      std::vector<uint8_t> tweak(random() % 70);
      for (uint8_t& byte : tweak) byte = static_cast<uint8_t>(random());
      std::vector<uint16_t> ciphertext(length);
      std::vector<uint16_t> decrypted(length);
      ASSERT_EQ(cipher.encrypt(radix, plaintext.data(), ciphertext.data(), length, tweak.data(),
                               tweak.size()),
                Status::kOk);
      for (uint16_t numeral : ciphertext) ASSERT_LT(numeral, radix);
      EXPECT_NE(ciphertext, plaintext);
      ASSERT_EQ(cipher.decrypt(radix, ciphertext.data(), decrypted.data(), length, tweak.data(),
                               tweak.size()),
                Status::kOk);
      EXPECT_EQ(decrypted, plaintext);
    }
  }
}

TEST(Ff1Test, Refusals) {
  Cipher cipher;
  const uint16_t numerals[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  uint16_t out[8];
  uint64_t value = 0;
  EXPECT_EQ(cipher.encrypt(10, numerals, out, 8, nullptr, 0), Status::kNoKey);
  EXPECT_EQ(cipher.encrypt_binary(1, 63, nullptr, 0, &value), Status::kNoKey);
  const std::vector<uint8_t> key = from_hex(kKey128);
  EXPECT_EQ(cipher.set_key(key.data(), 15), Status::kInvalidKeyLength);
  EXPECT_EQ(cipher.set_key(key.data(), 0), Status::kInvalidKeyLength);
  EXPECT_FALSE(cipher.has_key());
  ASSERT_EQ(cipher.set_key(key.data(), 16), Status::kOk);
  EXPECT_EQ(cipher.encrypt(1, numerals, out, 8, nullptr, 0), Status::kInvalidRadix);
  EXPECT_EQ(cipher.encrypt(65537, numerals, out, 8, nullptr, 0), Status::kInvalidRadix);
  EXPECT_EQ(cipher.encrypt(10, numerals, out, 5, nullptr, 0), Status::kTooShort);  // 10^5
  EXPECT_EQ(cipher.encrypt(10, numerals, out, 6, nullptr, 0), Status::kOk);        // 10^6
  EXPECT_EQ(cipher.encrypt(65536, numerals, out, 1, nullptr, 0), Status::kTooShort);
  EXPECT_EQ(cipher.encrypt(65536, numerals, out, 2, nullptr, 0), Status::kOk);
  EXPECT_EQ(cipher.encrypt(7, numerals, out, 8, nullptr, 0), Status::kInvalidNumeral);
  std::vector<uint16_t> long_input(kMaxLength + 1, 0);
  std::vector<uint16_t> long_output(kMaxLength + 1);
  EXPECT_EQ(
      cipher.encrypt(10, long_input.data(), long_output.data(), long_input.size(), nullptr, 0),
      Status::kTooLong);
  EXPECT_EQ(cipher.encrypt_binary(1, 19, nullptr, 0, &value), Status::kTooShort);
  EXPECT_EQ(cipher.encrypt_binary(1, 65, nullptr, 0, &value), Status::kTooLong);
  EXPECT_EQ(cipher.encrypt_binary(uint64_t{1} << 63, 63, nullptr, 0, &value),
            Status::kInvalidNumeral);
  EXPECT_EQ(cipher.encrypt_binary(~uint64_t{0}, 64, nullptr, 0, &value), Status::kOk);
  cipher.clear();
  EXPECT_FALSE(cipher.has_key());
}

TEST(Ff1Test, MovingACipherMovesItsKey) {
  Cipher first = cipher_with(kKey128);
  uint64_t expected = 0;
  ASSERT_EQ(first.encrypt_binary(12345, 63, nullptr, 0, &expected), Status::kOk);
  Cipher second(std::move(first));
  EXPECT_FALSE(first.has_key());  // NOLINT(bugprone-use-after-move): moved-from is empty
  uint64_t value = 0;
  ASSERT_EQ(second.encrypt_binary(12345, 63, nullptr, 0, &value), Status::kOk);
  EXPECT_EQ(value, expected);
  Cipher third;
  third = std::move(second);
  ASSERT_EQ(third.encrypt_binary(12345, 63, nullptr, 0, &value), Status::kOk);
  EXPECT_EQ(value, expected);
}

}  // namespace
}  // namespace snowflake::ff1
