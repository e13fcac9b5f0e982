// Key sets handed by the one process that reads the key file to every other
// process of the server, in shared memory (issue 45; src/pg/public_id_keys.cpp
// says who reads, publishes and takes them).
//
// Each publication is a generation: a number, never 0, one more than the last,
// with the KeySet and the source it came from (the file's path). The table
// keeps the last kPublishedSlots generations, generation g in slot
// g % kPublishedSlots, so that a process can still take an older set it was
// told to use (a parallel worker, its leader's) after newer ones came.
//
// The protocol: one writer at a time (the caller makes sure of it), readers
// without a lock, a sequence lock per slot. The writer sets the slot's
// generation to 0, writes the words, then sets the new generation (release)
// and then `latest`. A reader loads the slot's generation (acquire), copies
// the words, and loads the generation again after an acquire fence: the copy
// is whole if both loads gave the generation it wanted, else it was being
// overwritten and the reader has nothing (read) or tries the newest again
// (read_latest). Every word is a relaxed atomic, so a copy that races a write
// is a stale value, never a data race. Nothing allocates or locks; the table
// is plain memory made only of lock-free atomics, fit for memory shared
// between processes (as generator.hpp's state is).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "public_id.hpp"

namespace snowflake::public_id {

static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "the published key sets live in memory shared between processes");

inline constexpr uint32_t kPublishedSlots = 8;
// The source's room with its terminating zero (PostgreSQL's MAXPGPATH).
inline constexpr std::size_t kSourceBytes = 1024;

class PublishedKeySets {
 public:
  // Value-initialized (`new (memory) PublishedKeySets()`): nothing published.
  PublishedKeySets() noexcept = default;
  PublishedKeySets(const PublishedKeySets&) = delete;
  PublishedKeySets& operator=(const PublishedKeySets&) = delete;

  // One writer at a time. Publishes `keys` and `source` (shorter than
  // kSourceBytes: a longer one is cut) as the next generation, which it
  // returns, and which overwrites the generation kPublishedSlots before it.
  uint32_t publish(const KeySet& keys, const char* source) noexcept;

  // The newest generation; 0 if none was published.
  uint32_t latest() const noexcept { return latest_.load(std::memory_order_acquire); }

  // Copies generation `generation` (its keys, and its source with a
  // terminating zero); false if it is not kept (never published, or
  // overwritten, even while it was copied), `keys` then empty.
  bool read(uint32_t generation, KeySet* keys, char* source) const noexcept;

  // Copies the newest generation and sets `*generation`; false only if none
  // was published, or the writer overwrote each of kLatestAttempts copies.
  bool read_latest(uint32_t* generation, KeySet* keys, char* source) const noexcept;

  static constexpr int kLatestAttempts = 100;

 private:
  static constexpr std::size_t kKeyWords = sizeof(KeySet::key) / 8;
  static constexpr std::size_t kLengthWords = sizeof(KeySet::length) / 8;
  static constexpr std::size_t kSourceWords = kSourceBytes / 8;
  // The keys, their lengths, the current version, then the source.
  static constexpr std::size_t kWords = kKeyWords + kLengthWords + 1 + kSourceWords;

  struct alignas(64) Slot {
    std::atomic<uint32_t> generation{0};  // 0: being written, or never
    std::atomic<uint64_t> words[kWords]{};
  };

  std::atomic<uint32_t> latest_{0};
  Slot slots_[kPublishedSlots];
};

}  // namespace snowflake::public_id
