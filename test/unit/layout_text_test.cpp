// Presets and specifications (layout_text.hpp): every preset against its
// system's published formula, written out here with plain shifts and
// arithmetic (independently of src/), and a known ID where the system
// publishes one; compose and decompose inverse over random fields and random
// IDs for every preset and for random valid specifications; the parser's
// every fault, with where it points; the canonical text read back.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "layout.hpp"
#include "layout_text.hpp"
#include "test_support.hpp"

namespace snowflake {
namespace {

using unit_test::same_fields;
using unit_test::show;
using unit_test::unix_ms_utc;

// A system's own formula: the ID of (unix_ms, node fields, sequence), and the
// expected decoding in snowflake's terms (the time rounded down to the unit).
struct Published {
  const char* preset;
  int64_t first_ms;  // the formula's range of times, in ms since 1970
  int64_t last_ms;
  int64_t max_datacenter;
  int64_t max_worker;
  int64_t max_sequence;
  std::function<uint64_t(int64_t unix_ms, int64_t datacenter, int64_t worker, int64_t sequence)>
      encode;
  int64_t unit_ms;
};

const std::vector<Published>& published() {
  static const std::vector<Published> systems = {
      // Twitter's IdWorker: (timestamp - twepoch) << 22 | datacenterId << 17 |
      // workerId << 12 | sequence.
      {"twitter", 1288834974657, 1288834974657 + (int64_t{1} << 41) - 1, 31, 31, 4095,
       [](int64_t ms, int64_t dc, int64_t w, int64_t s) {
         return static_cast<uint64_t>(ms - 1288834974657) << 22 | static_cast<uint64_t>(dc) << 17 |
                static_cast<uint64_t>(w) << 12 | static_cast<uint64_t>(s);
       },
       1},
      // Leaf's SnowflakeIDGenImpl: twepoch 1288834974657, 10 worker bits.
      {"leaf", 1288834974657, 1288834974657 + (int64_t{1} << 41) - 1, 0, 1023, 4095,
       [](int64_t ms, int64_t, int64_t w, int64_t s) {
         return static_cast<uint64_t>(ms - 1288834974657) << 22 | static_cast<uint64_t>(w) << 12 |
                static_cast<uint64_t>(s);
       },
       1},
      // Discord: (ms - 1420070400000) << 22 | worker << 17 | process << 12 |
      // increment, over 42 bits of time (unsigned 64-bit IDs).
      {"discord", 1420070400000, 1420070400000 + (int64_t{1} << 42) - 1, 31, 31, 4095,
       [](int64_t ms, int64_t worker, int64_t process, int64_t increment) {
         return static_cast<uint64_t>(ms - 1420070400000) << 22 |
                static_cast<uint64_t>(worker) << 17 | static_cast<uint64_t>(process) << 12 |
                static_cast<uint64_t>(increment);
       },
       1},
      // Instagram's next_id(): (now_millis - our_epoch) << 23 | shard_id << 10 |
      // seq_id % 1024.
      {"instagram", 1314220021721, 1314220021721 + (int64_t{1} << 41) - 1, 0, 8191, 1023,
       [](int64_t ms, int64_t, int64_t shard, int64_t s) {
         return static_cast<uint64_t>(ms - 1314220021721) << 23 |
                static_cast<uint64_t>(shard) << 10 | static_cast<uint64_t>(s);
       },
       1},
      // sony/sonyflake: elapsed 10 ms units since StartTime (2014-09-01 UTC)
      // << (8 + 16) | sequence << 16 | machineID.
      {"sonyflake", 1409529600000, 1409529600000 + ((int64_t{1} << 39) - 1) * 10, 0, 65535, 255,
       [](int64_t ms, int64_t, int64_t machine, int64_t s) {
         const int64_t elapsed = ms / 10 - 1409529600000 / 10;
         return static_cast<uint64_t>(elapsed) << 24 | static_cast<uint64_t>(s) << 16 |
                static_cast<uint64_t>(machine);
       },
       10},
      // Sonyflake v2 with its default StartTime, 2025-01-01 UTC.
      {"sonyflake_v2", 1735689600000, 1735689600000 + ((int64_t{1} << 39) - 1) * 10, 0, 65535, 255,
       [](int64_t ms, int64_t, int64_t machine, int64_t s) {
         const int64_t elapsed = ms / 10 - 1735689600000 / 10;
         return static_cast<uint64_t>(elapsed) << 24 | static_cast<uint64_t>(s) << 16 |
                static_cast<uint64_t>(machine);
       },
       10},
      // Baidu's BitsAllocator (1 + 28 + 22 + 13): deltaSeconds << 35 |
      // workerId << 13 | sequence, epochSeconds 1463673600.
      {"baidu", 1463673600000, 1463673600000 + ((int64_t{1} << 28) - 1) * 1000, 0, 4194303, 8191,
       [](int64_t ms, int64_t, int64_t w, int64_t s) {
         const int64_t delta_seconds = ms / 1000 - 1463673600;
         return static_cast<uint64_t>(delta_seconds) << 35 | static_cast<uint64_t>(w) << 13 |
                static_cast<uint64_t>(s);
       },
       1000},
      // Mastodon's timestamp_id: milliseconds since 1970 << 16 | 16 low bits.
      {"mastodon", 0, (int64_t{1} << 48) - 1, 0, 0, 65535,
       [](int64_t ms, int64_t, int64_t, int64_t low) {
         return static_cast<uint64_t>(ms) << 16 | static_cast<uint64_t>(low);
       },
       1},
      // pgEdge snowflake.c: msec << 22 | node << 12 | count, msec since
      // 2023-01-01 (SNOWFLAKE_EPOCH_OFFSET 1672531200 s).
      {"pgedge", 1672531200000, 1672531200000 + (int64_t{1} << 41) - 1, 0, 1023, 4095,
       [](int64_t ms, int64_t, int64_t node, int64_t count) {
         return static_cast<uint64_t>(ms - 1672531200000) << 22 |
                static_cast<uint64_t>(node) << 12 | static_cast<uint64_t>(count);
       },
       1},
      // The JavaScript-safe preset (this project's): 10 ms units since
      // 2025-01-01 UTC << 15 | worker << 10 | sequence, below 2^53.
      {"javascript", 1735689600000, 1735689600000 + ((int64_t{1} << 38) - 1) * 10, 0, 31, 1023,
       [](int64_t ms, int64_t, int64_t w, int64_t s) {
         const int64_t elapsed = (ms - 1735689600000) / 10;
         return static_cast<uint64_t>(elapsed) << 15 | static_cast<uint64_t>(w) << 10 |
                static_cast<uint64_t>(s);
       },
       10},
  };
  return systems;
}

int64_t between(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng() % (static_cast<uint64_t>(hi - lo) + 1));
}

TEST(LayoutPresets, EveryPresetHasAPublishedFormulaHere) {
  ASSERT_EQ(published().size(), preset_count());
  for (const Published& system : published())
    EXPECT_NE(find_preset(system.preset), nullptr) << system.preset;
}

// Random times and fields: the preset composes what the system's formula
// composes, and decodes it back to the fields and the time's unit.
TEST(LayoutPresets, EachPresetMatchesItsSystemsFormula) {
  std::mt19937_64 rng(20);
  for (const Published& system : published()) {
    SCOPED_TRACE(system.preset);
    const Layout layout(find_preset(system.preset)->parts);
    EXPECT_EQ(layout.unit_ms(), system.unit_ms);
    for (int i = 0; i < 20000; i++) {
      // The edges of the range as well as random times in it.
      const int64_t ms = i == 0   ? system.first_ms
                         : i == 1 ? system.last_ms
                                  : between(rng, system.first_ms, system.last_ms);
      const int64_t dc = between(rng, 0, system.max_datacenter);
      const int64_t worker = between(rng, 0, system.max_worker);
      const int64_t sequence = between(rng, 0, system.max_sequence);
      const int64_t id = static_cast<int64_t>(system.encode(ms, dc, worker, sequence));
      const Fields expected{(ms - layout.epoch_ms()) / system.unit_ms, dc, worker, sequence};
      ASSERT_EQ(layout.compose(expected), id) << "ms " << ms << ", fields " << show(expected);
      ASSERT_TRUE(layout.holds(id)) << id;
      const Fields decoded = layout.decompose(id);
      ASSERT_TRUE(same_fields(decoded, expected))
          << "id " << id << ": " << show(decoded) << " instead of " << show(expected);
      ASSERT_EQ(layout.unix_ms(decoded.timestamp), ms - (ms - layout.epoch_ms()) % system.unit_ms);
      ASSERT_EQ(layout.timestamp_at_unix_ms(ms), expected.timestamp);
    }
  }
}

// IDs the systems publish.
TEST(LayoutPresets, PublishedIds) {
  // Discord's API reference: 175928847299117063 is 2016-04-30 11:18:25.796
  // UTC, internal worker 1, internal process 0, increment 7.
  const Layout discord(find_preset("discord")->parts);
  const Fields f = discord.decompose(175928847299117063);
  EXPECT_EQ(discord.unix_ms(f.timestamp), unix_ms_utc(2016, 4, 30, 11, 18, 25, 796));
  EXPECT_TRUE(same_fields(f, Fields{f.timestamp, 1, 0, 7})) << show(f);
  // Twitter's: 1541815603606036480 is 2022-06-28 16:07:40.105 UTC.
  const Layout twitter(find_preset("twitter")->parts);
  EXPECT_EQ(twitter.unix_ms(twitter.timestamp_of(1541815603606036480)),
            unix_ms_utc(2022, 6, 28, 16, 7, 40, 105));
  EXPECT_TRUE(twitter.same_as(Layout()));
}

TEST(LayoutPresets, BitsAndEnds) {
  struct Case {
    const char* name;
    int total_bits;
    int64_t last_issued_unix_ms;  // when a generator of the preset runs out
  };
  const std::vector<Case> cases = {
      {"twitter", 63, unix_ms_utc(2080, 7, 10, 17, 30, 30, 208)},
      {"discord", 64, unix_ms_utc(2084, 9, 6, 15, 47, 35, 551)},     // the sign bit
      {"instagram", 64, unix_ms_utc(2046, 6, 27, 17, 0, 49, 496)},   // the sign bit
      {"sonyflake", 63, unix_ms_utc(2188, 11, 16, 3, 28, 58, 870)},  // 174 years
      {"baidu", 63, unix_ms_utc(2024, 11, 20, 13, 24, 15)},          // ran out
      {"mastodon", 64, (int64_t{1} << 47) - 1},
      {"javascript", 53, unix_ms_utc(2112, 2, 9, 13, 44, 29, 430)},
  };
  for (const Case& c : cases) {
    const Layout layout(find_preset(c.name)->parts);
    EXPECT_EQ(layout.total_bits(), c.total_bits) << c.name;
    EXPECT_EQ(layout.last_issued_unix_ms(), c.last_issued_unix_ms) << c.name;
    EXPECT_GT(layout.max_id(layout.max_issued_timestamp()), 0) << c.name;
  }
  const Layout javascript(find_preset("javascript")->parts);
  EXPECT_EQ(javascript.max_id(javascript.max_timestamp()), (int64_t{1} << 53) - 1);
  EXPECT_EQ(javascript.max_worker_id(), 31);
  EXPECT_EQ(javascript.max_sequence(), 1023);
}

// snowflake_id_span: the longest span is the generator's whole range, and its
// difference of IDs stays a positive bigint; in a 64-bit layout (Discord's
// 69.8 years) one unit more reaches the sign bit, as 70 years did.
TEST(LayoutPresets, LongestSpanStaysPositive) {
  for (std::size_t i = 0; i < preset_count(); i++) {
    const Layout layout(presets()[i].parts);
    const char* name = presets()[i].name;
    EXPECT_EQ(layout.max_span(), layout.max_issued_timestamp()) << name;
    EXPECT_GT(layout.span_ids(layout.max_span()), 0) << name;
    EXPECT_EQ(layout.span_ids(layout.max_span()),
              layout.min_id(layout.max_span()) - layout.min_id(0))
        << name;
    EXPECT_EQ(layout.span_ids(1), layout.min_id(1)) << name;
    if (layout.total_bits() == 64) {
      EXPECT_LT(layout.min_id(layout.max_span() + 1), 0) << name << ": past it, the sign bit";
    }
  }
  const Layout discord(find_preset("discord")->parts);
  const int64_t seventy_years_ms = int64_t{70} * 36525 * 24 * 3600 * 10;
  EXPECT_LT(discord.max_span(), seventy_years_ms);
  EXPECT_GT(discord.max_span(), seventy_years_ms - int64_t{365} * 24 * 3600 * 1000);
}

// A random valid specification's parts.
LayoutParts random_parts(std::mt19937_64& rng) {
  for (;;) {
    LayoutParts parts;
    parts.timestamp_bits = static_cast<int>(between(rng, kMinTimestampBits, kMaxTimestampBits));
    parts.datacenter_bits = static_cast<int>(rng() % 3 == 0 ? 0 : between(rng, 1, 30));
    parts.worker_bits = static_cast<int>(rng() % 3 == 0 ? 0 : between(rng, 1, 30));
    parts.sequence_bits = static_cast<int>(between(rng, 1, 31));
    std::array<Field, 3> order{Field::kDatacenter, Field::kWorker, Field::kSequence};
    std::shuffle(order.begin(), order.end(), rng);
    parts.order = FieldOrder{order[0], order[1], order[2]};
    parts.unit_ms = rng() % 2 == 0 ? 1 : between(rng, 1, 1000);
    parts.epoch_ms = between(rng, 0, int64_t{1} << 42);
    if (Layout::check(parts) == LayoutCheck::kOk) return parts;
  }
}

// compose and decompose are inverse: over random fields (decompose(compose))
// and random IDs of the layout's width (compose(decompose)).
void expect_inverse(const Layout& layout, std::mt19937_64& rng, int rounds) {
  for (int i = 0; i < rounds; i++) {
    const Fields f{between(rng, 0, layout.max_timestamp()),
                   between(rng, 0, layout.max_datacenter_id()),
                   between(rng, 0, layout.max_worker_id()), between(rng, 0, layout.max_sequence())};
    const int64_t id = layout.compose(f);
    ASSERT_TRUE(layout.holds(id)) << id << " from " << show(f);
    ASSERT_TRUE(same_fields(layout.decompose(id), f))
        << show(f) << " -> " << id << " -> " << show(layout.decompose(id));
    ASSERT_GE(id, layout.min_id(f.timestamp)) << show(f);
    ASSERT_LE(static_cast<uint64_t>(id), static_cast<uint64_t>(layout.max_id(f.timestamp)))
        << show(f);

    const uint64_t bits = rng();
    const int64_t any_id =
        static_cast<int64_t>(layout.total_bits() == 64 ? bits : bits >> (64 - layout.total_bits()));
    ASSERT_EQ(layout.compose(layout.decompose(any_id)), any_id);
  }
}

TEST(LayoutProperty, ComposeAndDecomposeAreInverseForEveryPreset) {
  std::mt19937_64 rng(53);
  for (std::size_t i = 0; i < preset_count(); i++) {
    SCOPED_TRACE(presets()[i].name);
    expect_inverse(Layout(presets()[i].parts), rng, 100000);
  }
}

TEST(LayoutProperty, ComposeAndDecomposeAreInverseForRandomSpecifications) {
  std::mt19937_64 rng(64);
  for (int i = 0; i < 2000; i++) {
    const LayoutParts parts = random_parts(rng);
    char text[kLayoutTextSize];
    describe_layout(parts, text, sizeof(text));
    SCOPED_TRACE(text);
    // The specification read back is the same layout.
    const ParsedLayout parsed = parse_layout(text);
    ASSERT_EQ(parsed.problem, LayoutTextProblem::kOk);
    ASSERT_TRUE(Layout(parsed.parts).same_as(Layout(parts)));
    expect_inverse(Layout(parsed.parts), rng, 500);
  }
}

// The text forms of every preset read back as the preset.
TEST(LayoutText, PresetsAndTheirSpecificationsAgree) {
  for (std::size_t i = 0; i < preset_count(); i++) {
    const Preset& preset = presets()[i];
    char text[kLayoutTextSize];
    describe_layout(preset.parts, text, sizeof(text));
    const ParsedLayout by_name = parse_layout(preset.name);
    const ParsedLayout by_text = parse_layout(text);
    ASSERT_EQ(by_name.problem, LayoutTextProblem::kOk) << preset.name;
    ASSERT_EQ(by_text.problem, LayoutTextProblem::kOk) << text;
    EXPECT_EQ(by_name.preset, &preset);
    EXPECT_TRUE(Layout(by_name.parts).same_as(Layout(by_text.parts))) << text;
  }
  char text[kLayoutTextSize];
  describe_layout(find_preset("sonyflake")->parts, text, sizeof(text));
  EXPECT_STREQ(text, "time:39 sequence:8 worker:16 unit:10ms epoch:1409529600000");
  describe_layout(LayoutParts{}, text, sizeof(text));
  EXPECT_STREQ(text, "time:41 datacenter:5 worker:5 sequence:12 unit:1ms epoch:1288834974657");
}

TEST(LayoutText, SpellingsThatReadTheSame) {
  const Layout sonyflake(find_preset("sonyflake")->parts);
  for (const char* text : {"sonyflake", "SonyFlake", "  sonyflake  ",
                           "time:39 sequence:8 worker:16 unit:10ms epoch:1409529600000",
                           "TIME:39,SEQUENCE:8,WORKER:16,UNIT:10MS,EPOCH:1409529600000",
                           "epoch:1409529600000 unit:10ms time:39 sequence:8 worker:16",
                           "time:039 sequence:8 worker:16 unit:10ms epoch:01409529600000",
                           "sonyflake epoch:1409529600000 unit:10ms"}) {
    const ParsedLayout parsed = parse_layout(text);
    ASSERT_EQ(parsed.problem, LayoutTextProblem::kOk) << text;
    EXPECT_TRUE(Layout(parsed.parts).same_as(sonyflake)) << text;
  }
  // A preset's epoch or unit replaced.
  ParsedLayout parsed = parse_layout("sonyflake epoch:1700000000000");
  ASSERT_EQ(parsed.problem, LayoutTextProblem::kOk);
  EXPECT_EQ(parsed.parts.epoch_ms, 1700000000000);
  EXPECT_EQ(parsed.parts.sequence_bits, 8);
  parsed = parse_layout("twitter unit:1s");
  ASSERT_EQ(parsed.problem, LayoutTextProblem::kOk);
  EXPECT_EQ(parsed.parts.unit_ms, 1000);
  // Defaults: 1 ms, Twitter's epoch; a node field left out has 0 bits.
  parsed = parse_layout("time:41 sequence:22");
  ASSERT_EQ(parsed.problem, LayoutTextProblem::kOk);
  EXPECT_EQ(parsed.parts.unit_ms, 1);
  EXPECT_EQ(parsed.parts.epoch_ms, kDefaultEpochMs);
  EXPECT_EQ(parsed.parts.datacenter_bits + parsed.parts.worker_bits, 0);
  for (const char* unit : {"unit:1ms", "unit:1000ms", "unit:1s", "unit:250MS"}) {
    EXPECT_EQ(parse_layout(std::string("twitter ") + unit).problem, LayoutTextProblem::kOk) << unit;
  }
}

struct Fault {
  const char* text;
  LayoutTextProblem problem;
  std::size_t position;
  std::size_t length;
  LayoutCheck check = LayoutCheck::kOk;
};

TEST(LayoutText, EveryFaultAndWhereItIs) {
  const std::vector<Fault> faults = {
      {"", LayoutTextProblem::kEmpty, 0, 0},
      {" , ", LayoutTextProblem::kEmpty, 3, 0},
      {"twiter", LayoutTextProblem::kUnknownPreset, 0, 6},
      {"time:41 sequence:22 twitter", LayoutTextProblem::kNotAnItem, 20, 7},
      {"time:41 :5 sequence:22", LayoutTextProblem::kNotAnItem, 8, 2},
      {"time:41 worker: sequence:22", LayoutTextProblem::kNotAnItem, 8, 7},
      {"time:41 shard:13 sequence:10", LayoutTextProblem::kUnknownName, 8, 8},
      {"sonyflake sequence:8", LayoutTextProblem::kFieldAfterPreset, 10, 10},
      {"time:41 worker:5 worker:5 sequence:12", LayoutTextProblem::kRepeated, 17, 8},
      {"twitter unit:1ms unit:1ms", LayoutTextProblem::kRepeated, 17, 8},
      {"sequence:12 time:41", LayoutTextProblem::kTimeNotFirst, 0, 11},
      {"time:41 worker:x sequence:12", LayoutTextProblem::kBadWidth, 8, 8},
      {"time:4100 sequence:12", LayoutTextProblem::kBadWidth, 0, 9},
      {"time:41 worker:-1 sequence:12", LayoutTextProblem::kBadWidth, 8, 9},
      {"twitter unit:10", LayoutTextProblem::kBadUnit, 8, 7},
      {"twitter unit:ms", LayoutTextProblem::kBadUnit, 8, 7},
      {"twitter unit:1min", LayoutTextProblem::kBadUnit, 8, 9},
      {"twitter epoch:2020-01-01", LayoutTextProblem::kBadEpoch, 8, 16},
      {"twitter epoch:9223372036854775808", LayoutTextProblem::kBadEpoch, 8, 25},
      {"worker:10", LayoutTextProblem::kTimeNotFirst, 0, 9},
      {"time:41 worker:10 epoch:0", LayoutTextProblem::kNoSequence, 25, 0},
      {"epoch:0", LayoutTextProblem::kNoTime, 7, 0},
      {"time:0 sequence:12", LayoutTextProblem::kInvalidLayout, 0, 6,
       LayoutCheck::kTimestampOutOfRange},
      {"time:41 datacenter:31 sequence:12", LayoutTextProblem::kInvalidLayout, 8, 13,
       LayoutCheck::kDatacenterOutOfRange},
      {"time:20 worker:40 sequence:4", LayoutTextProblem::kInvalidLayout, 8, 9,
       LayoutCheck::kWorkerOutOfRange},
      {"time:20 sequence:0", LayoutTextProblem::kInvalidLayout, 8, 10,
       LayoutCheck::kSequenceOutOfRange},
      {"time:50 worker:10 sequence:12", LayoutTextProblem::kInvalidLayout, 0, 29,
       LayoutCheck::kTooWide},
      {"twitter unit:0ms", LayoutTextProblem::kInvalidLayout, 0, 16, LayoutCheck::kUnitOutOfRange},
      {"twitter unit:1001ms", LayoutTextProblem::kInvalidLayout, 0, 19,
       LayoutCheck::kUnitOutOfRange},
      {"time:54 sequence:1 unit:1s", LayoutTextProblem::kInvalidLayout, 0, 7,
       LayoutCheck::kTimeTooLong},
      {"twitter epoch:9223372036854775807", LayoutTextProblem::kInvalidLayout, 0, 33,
       LayoutCheck::kTimeTooLong},
  };
  for (const Fault& f : faults) {
    const ParsedLayout parsed = parse_layout(f.text);
    EXPECT_EQ(static_cast<int>(parsed.problem), static_cast<int>(f.problem))
        << '"' << f.text << '"';
    EXPECT_EQ(parsed.position, f.position) << '"' << f.text << '"';
    EXPECT_EQ(parsed.length, f.length) << '"' << f.text << '"';
    EXPECT_EQ(parsed.check, f.check) << '"' << f.text << '"';
  }
}

// Any text gives an answer, without reading past its end.
TEST(LayoutText, RandomTextNeverCrashes) {
  std::mt19937_64 rng(7);
  const std::string alphabet = "time:sequncwrkdapho0123456789, smT";
  for (int i = 0; i < 20000; i++) {
    std::string text(static_cast<std::size_t>(between(rng, 0, 40)), ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    const ParsedLayout parsed = parse_layout(std::string_view(text.data(), text.size()));
    EXPECT_LE(parsed.position + parsed.length, text.size()) << text;
    if (parsed.problem == LayoutTextProblem::kOk) {
      EXPECT_EQ(Layout::check(parsed.parts), LayoutCheck::kOk) << text;
    }
  }
}

}  // namespace
}  // namespace snowflake
