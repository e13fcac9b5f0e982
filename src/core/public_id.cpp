// Public IDs (see public_id.hpp).
#include "public_id.hpp"

namespace snowflake::public_id {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The version a key file's first word names: one digit in its canonical form
// (either case), not an alias, which would read as another version.
int version_of(const char* word, std::size_t length) {
  if (length != 1) return -1;
  const char c = word[0];
  if (c == 'I' || c == 'i' || c == 'L' || c == 'l' || c == 'O' || c == 'o') return -1;
  return base32::digit_value(c);
}

struct Word {
  const char* start;
  std::size_t length;
};

// The words of one line (up to three: a third one is a fault), before any '#'.
int split_line(const char* line, std::size_t length, Word words[3]) {
  int count = 0;
  std::size_t i = 0;
  while (i < length && line[i] != '#') {
    if (is_space(line[i])) {
      i++;
      continue;
    }
    const std::size_t start = i;
    while (i < length && line[i] != '#' && !is_space(line[i])) i++;
    if (count < 3) words[count] = Word{line + start, i - start};
    count++;
  }
  return count < 3 ? count : 3;
}

KeyFileStatus load_line(const Word* words, int count, KeySet* keys, int* version) {
  *version = version_of(words[0].start, words[0].length);
  if (*version < 0) return KeyFileStatus::kBadVersion;
  if (count < 2) return KeyFileStatus::kMissingKey;
  if (count > 2) return KeyFileStatus::kExtraText;
  if (keys->length[*version] != 0) return KeyFileStatus::kDuplicateVersion;
  const Word& hex = words[1];
  if (hex.length != 32 && hex.length != 48 && hex.length != 64) return KeyFileStatus::kBadKey;
  const std::size_t key_length = hex.length / 2;
  uint8_t* key = keys->key[*version];
  for (std::size_t i = 0; i < key_length; i++) {
    const int high = hex_value(hex.start[2 * i]);
    const int low = hex_value(hex.start[2 * i + 1]);
    if (high < 0 || low < 0) return KeyFileStatus::kBadKey;  // the caller wipes the set
    key[i] = static_cast<uint8_t>(high << 4 | low);
  }
  keys->length[*version] = static_cast<uint8_t>(key_length);
  return KeyFileStatus::kOk;
}

}  // namespace

int KeyRing::count() const noexcept {
  int keys_count = 0;
  for (const ff1::Cipher& key : keys) keys_count += key.has_key() ? 1 : 0;
  return keys_count;
}

void KeyRing::clear() noexcept {
  for (ff1::Cipher& key : keys) key.clear();
  current = -1;
}

ff1::Status KeyRing::load(const KeySet& set, int* version) noexcept {
  clear();
  *version = -1;
  for (int v = 0; v < kVersions; v++) {
    if (set.length[v] == 0) continue;
    const ff1::Status status = keys[v].set_key(set.key[v], set.length[v]);
    if (status != ff1::Status::kOk) {
      clear();
      *version = v;
      return status;
    }
  }
  current = set.current;
  return ff1::Status::kOk;
}

void KeySet::clear() noexcept {
  ff1::wipe(key, sizeof(key));
  ff1::wipe(length, sizeof(length));
  current = -1;
}

bool same_keys(const KeySet& a, const KeySet& b) noexcept {
  if (a.current != b.current) return false;
  for (int v = 0; v < kVersions; v++) {
    if (a.length[v] != b.length[v]) return false;
    for (std::size_t i = 0; i < a.length[v]; i++)
      if (a.key[v][i] != b.key[v][i]) return false;
  }
  return true;
}

void KeyRing::describe_versions(char* out, std::size_t size) const noexcept {
  std::size_t length = 0;
  for (int version = 0; version < kVersions; version++) {
    if (!keys[version].has_key()) continue;
    if (length > 0 && length + 2 < size) {
      out[length++] = ',';
      out[length++] = ' ';
    }
    if (length + 1 < size) out[length++] = base32::digit(version);
  }
  if (size > 0) out[length < size ? length : size - 1] = '\0';
}

KeyFileResult parse_key_file(const char* text, std::size_t length, KeySet* keys) noexcept {
  keys->clear();
  int line = 0;
  std::size_t start = 0;
  while (start < length) {
    std::size_t end = start;
    while (end < length && text[end] != '\n') end++;
    line++;
    Word words[3];
    const int count = split_line(text + start, end - start, words);
    if (count > 0) {
      int version = -1;
      const KeyFileStatus status = load_line(words, count, keys, &version);
      if (status != KeyFileStatus::kOk) {
        keys->clear();
        return {status, line};
      }
      keys->current = version;
    }
    start = end + 1;
  }
  if (keys->empty()) return {KeyFileStatus::kNoKey, 0};
  return {KeyFileStatus::kOk, 0};
}

KeyFileResult load_key_file(const char* text, std::size_t length, KeyRing* ring) noexcept {
  ring->clear();
  KeySet keys;
  KeyFileResult result = parse_key_file(text, length, &keys);
  int version = -1;
  if (result.status == KeyFileStatus::kOk && ring->load(keys, &version) != ff1::Status::kOk)
    result = {KeyFileStatus::kCryptoFailure, 0};
  keys.clear();
  return result;
}

ff1::Status encode(const KeyRing& ring, int64_t id, const uint8_t* tweak, std::size_t tweak_length,
                   char out[kWidth]) noexcept {
  if (ring.empty()) return ff1::Status::kNoKey;
  uint64_t hidden = 0;
  const ff1::Status status = ring.keys[ring.current].encrypt_binary(
      static_cast<uint64_t>(id), kIdBits, tweak, tweak_length, &hidden);
  if (status != ff1::Status::kOk) return status;
  out[0] = base32::digit(ring.current);
  base32::encode(static_cast<int64_t>(hidden), out + 1);
  return ff1::Status::kOk;
}

DecodeResult decode(const KeyRing& ring, const char* text, std::size_t length, const uint8_t* tweak,
                    std::size_t tweak_length) noexcept {
  DecodeResult result{DecodeStatus::kOk, 0, 0, -1, ff1::Status::kOk};
  if (ring.empty()) {
    result.status = DecodeStatus::kNoKey;
    return result;
  }
  // A character that no public ID has first: a text of the right length in
  // bytes may hold a multibyte character, and one of another length may be a
  // public ID with a stray character.
  for (std::size_t i = 0; i < length; i++) {
    if (base32::digit_value(text[i]) < 0) {
      result.status = DecodeStatus::kInvalidCharacter;
      result.position = i;
      return result;
    }
  }
  if (length != kWidth) {
    result.status = DecodeStatus::kWrongLength;
    return result;
  }
  result.version = base32::digit_value(text[0]);
  if (!ring.keys[result.version].has_key()) {
    result.status = DecodeStatus::kUnknownVersion;
    return result;
  }
  const base32::ParseResult digits = base32::decode(text + 1, base32::kWidth);
  if (digits.status != base32::ParseStatus::kOk) {
    result.status = DecodeStatus::kOutOfRange;
    return result;
  }
  uint64_t id = 0;
  result.cipher = ring.keys[result.version].decrypt_binary(static_cast<uint64_t>(digits.value),
                                                           kIdBits, tweak, tweak_length, &id);
  if (result.cipher != ff1::Status::kOk) {
    result.status = DecodeStatus::kCipherFailure;
    return result;
  }
  result.id = static_cast<int64_t>(id);
  return result;
}

}  // namespace snowflake::public_id
