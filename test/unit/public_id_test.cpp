// Public IDs (src/core/public_id): the text form, round trips over a million
// random IDs, what consecutive IDs look like (Hamming distances), keys and
// tweaks that give other texts, the tweak's bytes, rotation, the refusals, key
// files, and key sets (the bytes a ring is made from).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "public_id.hpp"

namespace snowflake::public_id {
namespace {

const char kKeyA[] = "2B7E151628AED2A6ABF7158809CF4F3C";
const char kKeyB[] = "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94";

KeyRing ring_of(const std::string& file) {
  KeyRing ring;
  const KeyFileResult result = load_key_file(file.data(), file.size(), &ring);
  EXPECT_EQ(result.status, KeyFileStatus::kOk) << "line " << result.line;
  return ring;
}

std::string encoded(const KeyRing& ring, int64_t id, const std::string& tweak = "") {
  char text[kWidth];
  EXPECT_EQ(encode(ring, id, reinterpret_cast<const uint8_t*>(tweak.data()), tweak.size(), text),
            ff1::Status::kOk);
  return std::string(text, kWidth);
}

DecodeResult decoded(const KeyRing& ring, const std::string& text, const std::string& tweak = "") {
  return decode(ring, text.data(), text.size(), reinterpret_cast<const uint8_t*>(tweak.data()),
                tweak.size());
}

uint64_t hidden_bits(const KeyRing& ring, int64_t id) {
  const std::string text = encoded(ring, id);
  return static_cast<uint64_t>(base32::decode(text.data() + 1, base32::kWidth).value);
}

TEST(PublicIdTest, FixedWidthTextWithTheVersionFirst) {
  const KeyRing ring = ring_of(std::string("A ") + kKeyA + "\n");
  for (int64_t id : {int64_t{0}, int64_t{1}, int64_t{1541815603606036480}, INT64_MAX}) {
    const std::string text = encoded(ring, id);
    ASSERT_EQ(text.size(), 14u);
    EXPECT_EQ(text[0], 'A');
    EXPECT_LE(text[1], '7') << text;  // 63 bits in 13 digits
    for (char c : text) EXPECT_GE(base32::digit_value(c), 0) << text;
    const DecodeResult back = decoded(ring, text);
    ASSERT_EQ(back.status, DecodeStatus::kOk) << text;
    EXPECT_EQ(back.id, id);
    EXPECT_EQ(back.version, 10);
  }
}

// The text of an ID must not change between releases: users keep them in
// bookmarks. These pin it; test/unit/ff1_reference.py gives the same.
TEST(PublicIdTest, KnownTexts) {
  const KeyRing ring = ring_of(std::string("A ") + kKeyA + "\n");
  EXPECT_EQ(encoded(ring, 1541815603606036480), "A3DH0M90E42XAG");
  EXPECT_EQ(encoded(ring, 1541815603606036480, "orders"), "A0T1PV5J06TZCB");
  EXPECT_EQ(encoded(ring, 0), "A6DK2SGWF676WD");
}

TEST(PublicIdTest, AMillionRandomIdsRoundTrip) {
  const KeyRing ring = ring_of(std::string("7 ") + kKeyB + "\n");
  std::mt19937_64 random(40);
  for (int i = 0; i < 1000000; i++) {
    const auto id = static_cast<int64_t>(random() >> 1);
    char text[kWidth];
    ASSERT_EQ(encode(ring, id, nullptr, 0, text), ff1::Status::kOk);
    const DecodeResult back = decode(ring, text, kWidth, nullptr, 0);
    ASSERT_EQ(back.status, DecodeStatus::kOk);
    ASSERT_EQ(back.id, id) << std::string(text, kWidth);
  }
}

// Consecutive IDs (one node's, one millisecond apart or one sequence number
// apart) give texts as far apart as unrelated ones: the 63 hidden bits of
// neighbours differ in 31.5 bits on average, each bit in half of the pairs,
// as for random pairs (binomial: mean 31.5, standard deviation 3.97).
TEST(PublicIdTest, ConsecutiveIdsGiveUnrelatedTexts) {
  const KeyRing ring = ring_of(std::string("A ") + kKeyA + "\n");
  constexpr int kPairs = 100000;
  const int64_t first = 1541815603606036480;  // a real ID: 2022-06-28, datacenter 11
  int flips[kIdBits] = {};
  double sum = 0;
  double sum_of_squares = 0;
  int fewest = kIdBits;
  uint64_t previous = hidden_bits(ring, first);
  for (int i = 1; i <= kPairs; i++) {
    const uint64_t next = hidden_bits(ring, first + i);
    const uint64_t differ = previous ^ next;
    const int distance = __builtin_popcountll(differ);
    sum += distance;
    sum_of_squares += static_cast<double>(distance) * distance;
    if (distance < fewest) fewest = distance;
    for (int bit = 0; bit < kIdBits; bit++) flips[bit] += static_cast<int>(differ >> bit & 1);
    previous = next;
  }
  const double mean = sum / kPairs;
  const double deviation = std::sqrt(sum_of_squares / kPairs - mean * mean);
  EXPECT_NEAR(mean, 31.5, 0.1);  // the standard error is 0.0126
  EXPECT_NEAR(deviation, 3.97, 0.1);
  EXPECT_GE(fewest, 8);  // P(distance <= 7) per pair is about 1e-10
  for (int bit = 0; bit < kIdBits; bit++)
    EXPECT_NEAR(flips[bit], kPairs / 2, 1000) << "bit " << bit;  // 6.3 standard errors
}

TEST(PublicIdTest, AnotherKeyOrTweakGivesAnotherText) {
  const KeyRing a = ring_of(std::string("A ") + kKeyA + "\n");
  const KeyRing same_key_other_version = ring_of(std::string("B ") + kKeyA + "\n");
  const KeyRing b = ring_of(std::string("A ") + kKeyB + "\n");
  std::mt19937_64 random(41);
  int same_text = 0;
  int same_under_tweak = 0;
  for (int i = 0; i < 100000; i++) {
    const auto id = static_cast<int64_t>(random() >> 1);
    const std::string text = encoded(a, id);
    same_text += text == encoded(b, id) ? 1 : 0;
    same_under_tweak += text == encoded(a, id, "orders") ? 1 : 0;
    same_under_tweak += encoded(a, id, "orders") == encoded(a, id, "orders ") ? 1 : 0;
    // The same key under another version: the same digits, another first character.
    EXPECT_EQ(encoded(same_key_other_version, id).substr(1), text.substr(1));
  }
  EXPECT_EQ(same_text, 0);
  EXPECT_EQ(same_under_tweak, 0);
  // A tweak that differs decodes to another ID (nothing tells it apart).
  const int64_t id = 1541815603606036480;
  const DecodeResult other = decoded(a, encoded(a, id, "orders"), "users");
  ASSERT_EQ(other.status, DecodeStatus::kOk);
  EXPECT_NE(other.id, id);
}

// The tweak is bytes, and the glue passes a text tweak as UTF-8 in every
// database (issue 45): "café" is these five bytes, and sql/public_id.sql
// finds the same text in a UTF8, a LATIN1 and an SQL_ASCII database
// (test/unit/ff1_reference.py's FF1 gives it too). The same word's LATIN1
// bytes would give another text.
TEST(PublicIdTest, TheTweakIsItsUtf8Bytes) {
  const KeyRing ring = ring_of(std::string("A ") + kKeyA + "\n");
  const int64_t id = 1541815603606036480;
  EXPECT_EQ(encoded(ring, id, "caf\xc3\xa9"), "A1GSFQ177PQ4G3");
  EXPECT_NE(encoded(ring, id, "caf\xe9"), encoded(ring, id, "caf\xc3\xa9"));
  EXPECT_EQ(decoded(ring, "A1GSFQ177PQ4G3", "caf\xc3\xa9").id, id);
}

TEST(PublicIdTest, RotationKeepsOldVersionsDecoding) {
  const KeyRing before = ring_of(std::string("A ") + kKeyA + "\n");
  const KeyRing after = ring_of(std::string("A ") + kKeyA + "\nB " + kKeyB + "\n");
  const KeyRing staged = ring_of(std::string("B ") + kKeyB + "\nA " + kKeyA + "\n");
  const KeyRing retired = ring_of(std::string("B ") + kKeyB + "\n");
  const int64_t id = 1541815603606036480;
  const std::string old_text = encoded(before, id);
  const std::string new_text = encoded(after, id);
  EXPECT_EQ(new_text[0], 'B');
  EXPECT_EQ(encoded(staged, id), old_text);  // a key listed first decodes, and does not encode yet
  EXPECT_EQ(decoded(after, old_text).id, id);
  EXPECT_EQ(decoded(after, new_text).id, id);
  EXPECT_EQ(decoded(staged, new_text).id, id);
  const DecodeResult gone = decoded(retired, old_text);
  EXPECT_EQ(gone.status, DecodeStatus::kUnknownVersion);
  EXPECT_EQ(gone.version, 10);
}

TEST(PublicIdTest, EveryWellFormedTextDecodes) {
  const KeyRing ring = ring_of(std::string("A ") + kKeyA + "\n");
  std::mt19937_64 random(42);
  for (int i = 0; i < 10000; i++) {
    std::string text = "A";
    text += base32::digit(static_cast<int>(random() % 8));
    for (int k = 0; k < 12; k++) text += base32::digit(static_cast<int>(random() % 32));
    const DecodeResult result = decoded(ring, text);
    ASSERT_EQ(result.status, DecodeStatus::kOk) << text;
    EXPECT_GE(result.id, 0);
    EXPECT_EQ(encoded(ring, result.id), text);
  }
}

TEST(PublicIdTest, CaseAndAliasesAsInBase32) {
  const KeyRing ring = ring_of(std::string("A ") + kKeyA + "\n");
  const int64_t id = 1541815603606036480;
  std::string text = encoded(ring, id);
  std::string lower = text;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  EXPECT_EQ(decoded(ring, lower).id, id);
  // 0 and 1 may be written O, I or L.
  std::string aliased = text;
  for (char& c : aliased) c = c == '0' ? 'O' : c == '1' ? 'l' : c;
  EXPECT_EQ(decoded(ring, aliased).id, id);
}

TEST(PublicIdTest, Refusals) {
  KeyRing empty;
  char text[kWidth];
  EXPECT_EQ(encode(empty, 1, nullptr, 0, text), ff1::Status::kNoKey);
  EXPECT_EQ(decoded(empty, "A3DH0M90E42XAG").status, DecodeStatus::kNoKey);

  const KeyRing ring = ring_of(std::string("A ") + kKeyA + "\n");
  EXPECT_EQ(decoded(ring, "").status, DecodeStatus::kWrongLength);
  EXPECT_EQ(decoded(ring, "A3DH0M90E42XA").status, DecodeStatus::kWrongLength);
  EXPECT_EQ(decoded(ring, "A3DH0M90E42XAG0").status, DecodeStatus::kWrongLength);
  EXPECT_EQ(decoded(ring, "A3DH0M90E42XA-").status, DecodeStatus::kInvalidCharacter);
  EXPECT_EQ(decoded(ring, "A3DH0M90E42XA\xc3\xbc").status, DecodeStatus::kInvalidCharacter);
  const DecodeResult invalid = decoded(ring, "A3DH0M90E42-AG");
  EXPECT_EQ(invalid.status, DecodeStatus::kInvalidCharacter);
  EXPECT_EQ(invalid.position, 11u);
  EXPECT_EQ(decoded(ring, "U3DH0M90E42XAG").status, DecodeStatus::kInvalidCharacter);
  const DecodeResult unknown = decoded(ring, "B3DH0M90E42XAG");
  EXPECT_EQ(unknown.status, DecodeStatus::kUnknownVersion);
  EXPECT_EQ(unknown.version, 11);
  EXPECT_EQ(decoded(ring, "A8000000000000").status, DecodeStatus::kOutOfRange);
  EXPECT_EQ(decoded(ring, "AZZZZZZZZZZZZZ").status, DecodeStatus::kOutOfRange);
  EXPECT_EQ(decoded(ring, "A7ZZZZZZZZZZZZ").status, DecodeStatus::kOk);
}

TEST(PublicIdTest, KeyFiles) {
  KeyRing ring;
  const std::string file = std::string("# snowflake public ID keys\n\n  0\t") + kKeyA +
                           "  # the first\r\nz " + kKeyB + "\nM " + kKeyA + "0123456789abcdef";
  KeyFileResult result = load_key_file(file.data(), file.size(), &ring);
  EXPECT_EQ(result.status, KeyFileStatus::kOk);
  EXPECT_EQ(ring.count(), 3);
  EXPECT_EQ(ring.current, 20);  // M, the last listed
  char versions[3 * kVersions];
  ring.describe_versions(versions, sizeof(versions));
  EXPECT_STREQ(versions, "0, M, Z");

  struct Fault {
    std::string file;
    KeyFileStatus status;
    int line;
  };
  const std::string a = kKeyA;
  const Fault faults[] = {
      {"", KeyFileStatus::kNoKey, 0},
      {"# nothing\n\n", KeyFileStatus::kNoKey, 0},
      {"A " + a + "\n" + a + "\n", KeyFileStatus::kBadVersion, 2},  // the key alone
      {"AB " + a + "\n", KeyFileStatus::kBadVersion, 1},
      {"O " + a + "\n", KeyFileStatus::kBadVersion, 1},  // an alias
      {"U " + a + "\n", KeyFileStatus::kBadVersion, 1},
      {"A\n", KeyFileStatus::kMissingKey, 1},
      {"A " + a + " current\n", KeyFileStatus::kExtraText, 1},
      {"A " + a + "\n\na " + a + "\n", KeyFileStatus::kDuplicateVersion, 3},
      {"A " + a.substr(1) + "\n", KeyFileStatus::kBadKey, 1},
      {"A " + a + "00\n", KeyFileStatus::kBadKey, 1},
      {"A " + a.substr(1) + "g\n", KeyFileStatus::kBadKey, 1},
  };
  for (const Fault& fault : faults) {
    SCOPED_TRACE(fault.file);
    result = load_key_file(fault.file.data(), fault.file.size(), &ring);
    EXPECT_EQ(result.status, fault.status);
    EXPECT_EQ(result.line, fault.line);
    EXPECT_TRUE(ring.empty());
    EXPECT_EQ(ring.count(), 0);
  }
}

// A key file parses into a KeySet without OpenSSL; the ring made of it
// encodes as the ring load_key_file makes; a set is compared and wiped whole.
TEST(PublicIdTest, KeySets) {
  const std::string file = std::string("A ") + kKeyA + "\nB " + kKeyB + "\n";
  KeySet set;
  EXPECT_TRUE(set.empty());
  const KeyFileResult result = parse_key_file(file.data(), file.size(), &set);
  ASSERT_EQ(result.status, KeyFileStatus::kOk);
  EXPECT_EQ(set.current, 11);  // B
  EXPECT_EQ(set.length[10], 16);
  EXPECT_EQ(set.length[11], 32);
  EXPECT_EQ(set.key[10][0], 0x2B);
  EXPECT_EQ(set.key[11][31], 0x94);
  for (int version = 0; version < kVersions; version++) {
    if (version != 10 && version != 11) {
      EXPECT_EQ(set.length[version], 0) << version;
    }
  }

  KeyRing ring;
  int failed = -2;
  ASSERT_EQ(ring.load(set, &failed), ff1::Status::kOk);
  EXPECT_EQ(failed, -1);
  const KeyRing loaded = ring_of(file);
  EXPECT_EQ(ring.count(), 2);
  EXPECT_EQ(ring.current, 11);
  EXPECT_EQ(encoded(ring, 42, "orders"), encoded(loaded, 42, "orders"));
  EXPECT_EQ(decoded(ring, encoded(loaded, 42)).id, 42);

  KeySet copy = set;
  EXPECT_TRUE(same_keys(copy, set));
  copy.key[10][15] ^= 1;
  EXPECT_FALSE(same_keys(copy, set));
  copy = set;
  copy.current = 10;
  EXPECT_FALSE(same_keys(copy, set));
  copy = set;
  copy.length[12] = 16;
  EXPECT_FALSE(same_keys(copy, set));

  copy.clear();
  EXPECT_TRUE(copy.empty());
  for (int version = 0; version < kVersions; version++) {
    EXPECT_EQ(copy.length[version], 0);
    for (std::size_t i = 0; i < kMaxKeyBytes; i++) EXPECT_EQ(copy.key[version][i], 0);
  }
  // An empty set makes an empty ring, which encodes nothing.
  ASSERT_EQ(ring.load(copy, &failed), ff1::Status::kOk);
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.count(), 0);

  // A fault leaves the set empty, as it leaves a ring.
  const std::string faulty = std::string("A ") + kKeyA + "\nB " + kKeyA + "0\n";
  EXPECT_EQ(parse_key_file(faulty.data(), faulty.size(), &set).status, KeyFileStatus::kBadKey);
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.length[10], 0);
  EXPECT_EQ(set.key[10][0], 0);
}

}  // namespace
}  // namespace snowflake::public_id
