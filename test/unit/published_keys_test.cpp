// Key sets published in shared memory (src/core/published_keys): one writer,
// readers without a lock; a generation is kept until kPublishedSlots newer
// ones overwrite it; a copy is whole or refused, even while the writer
// overwrites it (a reader thread against a writer thread).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>

#include "published_keys.hpp"

namespace snowflake::public_id {
namespace {

// A set whose every byte tells its generation, and the matching source.
KeySet set_of(uint32_t generation) {
  KeySet keys;
  for (int version = 0; version < kVersions; version++) {
    keys.length[version] = 32;
    std::memset(keys.key[version], static_cast<int>(generation & 0xff), kMaxKeyBytes);
  }
  keys.current = static_cast<int>(generation % kVersions);
  return keys;
}

std::string source_of(uint32_t generation) {
  return "/etc/keys/" + std::to_string(generation) + std::string(generation % 900, 'x');
}

// Whether `keys` and `source` are exactly set_of(generation) and its source.
bool whole(uint32_t generation, const KeySet& keys, const char* source) {
  return same_keys(keys, set_of(generation)) && source_of(generation) == source;
}

// As PostgreSQL hands it: memory of any content, aligned (ShmemInitStruct
// aligns to a cache line), then value-initialized.
constexpr std::align_val_t kAlignment{alignof(PublishedKeySets)};

struct Release {
  void operator()(PublishedKeySets* table) const {
    table->~PublishedKeySets();
    ::operator delete(table, kAlignment);
  }
};

std::unique_ptr<PublishedKeySets, Release> made_as_in_shared_memory() {
  void* memory = ::operator new(sizeof(PublishedKeySets), kAlignment);
  std::memset(memory, 0xa5, sizeof(PublishedKeySets));
  return std::unique_ptr<PublishedKeySets, Release>(new (memory) PublishedKeySets());
}

TEST(PublishedKeysTest, NothingBeforeTheFirstPublication) {
  const auto table = made_as_in_shared_memory();
  KeySet keys = set_of(7);
  char source[kSourceBytes] = "left over";
  uint32_t generation = 99;
  EXPECT_EQ(table->latest(), 0u);
  EXPECT_FALSE(table->read(0, &keys, source));
  EXPECT_FALSE(table->read(1, &keys, source));
  EXPECT_FALSE(table->read_latest(&generation, &keys, source));
  EXPECT_EQ(generation, 0u);
  EXPECT_TRUE(keys.empty());
  EXPECT_STREQ(source, "");
}

TEST(PublishedKeysTest, GenerationsAreKeptUntilOverwritten) {
  const auto table = made_as_in_shared_memory();
  KeySet keys;
  char source[kSourceBytes];
  for (uint32_t g = 1; g <= 3 * kPublishedSlots; g++) {
    const KeySet published = set_of(g);
    ASSERT_EQ(table->publish(published, source_of(g).c_str()), g);
    EXPECT_EQ(table->latest(), g);
    uint32_t latest = 0;
    ASSERT_TRUE(table->read_latest(&latest, &keys, source));
    EXPECT_EQ(latest, g);
    EXPECT_TRUE(whole(g, keys, source));
    // Every generation of the last kPublishedSlots is kept, and no older one.
    for (uint32_t older = 1; older <= g; older++) {
      const bool kept = g - older < kPublishedSlots;
      EXPECT_EQ(table->read(older, &keys, source), kept) << older << " after " << g;
      if (kept) {
        EXPECT_TRUE(whole(older, keys, source)) << older;
      } else {
        EXPECT_TRUE(keys.empty());
      }
    }
    EXPECT_FALSE(table->read(g + 1, &keys, source));
  }
}

TEST(PublishedKeysTest, AnEmptySetAndALongSource) {
  const auto table = made_as_in_shared_memory();
  KeySet keys = set_of(3);
  char source[kSourceBytes];
  const uint32_t generation = table->publish(KeySet(), "");
  ASSERT_TRUE(table->read(generation, &keys, source));
  EXPECT_TRUE(keys.empty());
  EXPECT_TRUE(same_keys(keys, KeySet()));
  EXPECT_STREQ(source, "");
  const std::string long_source(2 * kSourceBytes, 'p');
  ASSERT_TRUE(table->read(table->publish(set_of(4), long_source.c_str()), &keys, source));
  EXPECT_EQ(std::string(source), long_source.substr(0, kSourceBytes - 1));
}

// A reader copying while the writer publishes: every copy it gets is one
// generation's whole set, never a mixture; it gets some.
TEST(PublishedKeysTest, ACopyIsWholeOrRefused) {
  const auto table = made_as_in_shared_memory();
  table->publish(set_of(1), source_of(1).c_str());
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (uint32_t g = 2; g <= 300000; g++) table->publish(set_of(g), source_of(g).c_str());
    done = true;
  });
  long copies = 0;
  long refused = 0;
  long mixed = 0;
  KeySet keys;
  char source[kSourceBytes];
  while (!done) {
    uint32_t generation = 0;
    if (table->read_latest(&generation, &keys, source)) {
      copies++;
      mixed += whole(generation, keys, source) ? 0 : 1;
    }
    // An older generation, likely being overwritten now.
    const uint32_t older =
        table->latest() > kPublishedSlots ? table->latest() - kPublishedSlots + 1 : 1;
    if (table->read(older, &keys, source)) {
      mixed += whole(older, keys, source) ? 0 : 1;
    } else {
      refused++;
    }
  }
  writer.join();
  EXPECT_EQ(mixed, 0);
  EXPECT_GT(copies, 0);
  ::testing::Test::RecordProperty("refused", static_cast<int>(refused));
}

}  // namespace
}  // namespace snowflake::public_id
