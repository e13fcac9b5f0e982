// Key sets in shared memory (see published_keys.hpp).
#include "published_keys.hpp"

#include <cstring>

namespace snowflake::public_id {

namespace {

static_assert(sizeof(KeySet::key) % 8 == 0 && sizeof(KeySet::length) % 8 == 0 &&
                  kSourceBytes % 8 == 0,
              "a KeySet and a source are copied in whole words");

}  // namespace

uint32_t PublishedKeySets::publish(const KeySet& keys, const char* source) noexcept {
  uint64_t words[kWords] = {};
  std::memcpy(words, keys.key, sizeof(keys.key));
  std::memcpy(words + kKeyWords, keys.length, sizeof(keys.length));
  words[kKeyWords + kLengthWords] = static_cast<uint64_t>(static_cast<int64_t>(keys.current));
  const std::size_t source_length = strnlen(source, kSourceBytes - 1);
  std::memcpy(words + kKeyWords + kLengthWords + 1, source, source_length);

  const uint32_t generation = latest_.load(std::memory_order_relaxed) + 1;
  Slot& slot = slots_[generation % kPublishedSlots];
  slot.generation.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (std::size_t i = 0; i < kWords; i++) slot.words[i].store(words[i], std::memory_order_relaxed);
  slot.generation.store(generation, std::memory_order_release);
  latest_.store(generation, std::memory_order_release);
  ff1::wipe(words, sizeof(words));
  return generation;
}

bool PublishedKeySets::read(uint32_t generation, KeySet* keys, char* source) const noexcept {
  keys->clear();
  source[0] = '\0';
  if (generation == 0) return false;
  const Slot& slot = slots_[generation % kPublishedSlots];
  if (slot.generation.load(std::memory_order_acquire) != generation) return false;
  uint64_t words[kWords];
  for (std::size_t i = 0; i < kWords; i++) words[i] = slot.words[i].load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  const bool whole = slot.generation.load(std::memory_order_relaxed) == generation;
  if (whole) {
    std::memcpy(keys->key, words, sizeof(keys->key));
    std::memcpy(keys->length, words + kKeyWords, sizeof(keys->length));
    keys->current = static_cast<int>(static_cast<int64_t>(words[kKeyWords + kLengthWords]));
    std::memcpy(source, words + kKeyWords + kLengthWords + 1, kSourceBytes);
    source[kSourceBytes - 1] = '\0';
  }
  ff1::wipe(words, sizeof(words));
  return whole;
}

bool PublishedKeySets::read_latest(uint32_t* generation, KeySet* keys,
                                   char* source) const noexcept {
  for (int attempt = 0; attempt < kLatestAttempts; attempt++) {
    *generation = latest();
    if (*generation == 0) break;
    if (read(*generation, keys, source)) return true;
  }
  *generation = 0;
  keys->clear();
  source[0] = '\0';
  return false;
}

}  // namespace snowflake::public_id
