// Layouts as text: the presets (other systems' published layouts) and the
// specification syntax, both read by parse_layout(), and the canonical text
// of a layout (describe_layout()).
//
//   twitter                                     a preset
//   sonyflake epoch:1700000000000               a preset with its epoch replaced
//   time:41 worker:10 sequence:12               a specification
//   time:39 sequence:8 worker:16 unit:10ms epoch:1409529600000
//
// A specification names the fields most significant first: `time` first,
// then any of `datacenter`, `worker` and `sequence` in their order, each with
// its width in bits (`sequence` is required; a node field left out has 0
// bits). `unit:` is the time unit (`1ms` by default, up to `1s`: `10ms`,
// `250ms`, `1s`), `epoch:` the epoch in ms since 1970 (by default Twitter's,
// 1288834974657). Items are separated by spaces or commas; names, presets
// and units are case-insensitive. A preset, once released, never changes.
//
// Pure C++17, no PostgreSQL header, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "layout.hpp"

namespace snowflake {

struct Preset {
  const char* name;
  // Whose layout it is, and the names that system gives the node fields.
  const char* system;
  LayoutParts parts;
};

// The presets, in the order they are listed to users.
const Preset* presets() noexcept;
std::size_t preset_count() noexcept;
// The preset named `name` (case-insensitive), or nullptr.
const Preset* find_preset(std::string_view name) noexcept;

enum class LayoutTextProblem {
  kOk,
  kEmpty,             // no item at all
  kUnknownPreset,     // a first item without ':' that names no preset
  kNotAnItem,         // a later item without ':', or with an empty name or value
  kUnknownName,       // name:value with a name that is none of the fields or options
  kFieldAfterPreset,  // a field after a preset (a preset takes only unit: and epoch:)
  kRepeated,          // a field or option given twice
  kTimeNotFirst,      // a field before `time`
  kBadWidth,          // a width that is not a whole number
  kBadUnit,           // a unit that is not N ms or N s
  kBadEpoch,          // an epoch that is not a whole number of ms
  kNoTime,            // a specification without `time`
  kNoSequence,        // a specification without `sequence`
  kInvalidLayout,     // the layout does not check (see `check`)
};

struct ParsedLayout {
  LayoutTextProblem problem = LayoutTextProblem::kOk;
  // kInvalidLayout: what Layout::check() says.
  LayoutCheck check = LayoutCheck::kOk;
  // Where the fault is: the offending item (its byte offset and length in the
  // text), or the end of the text for what is missing.
  std::size_t position = 0;
  std::size_t length = 0;
  // kOk: the layout; otherwise what was read up to the fault.
  LayoutParts parts;
  // The preset the text named, or nullptr.
  const Preset* preset = nullptr;
};

ParsedLayout parse_layout(std::string_view text) noexcept;

// The canonical specification of `parts` ("time:41 datacenter:5 worker:5
// sequence:12 unit:1ms epoch:1288834974657"): NUL-terminated in `buffer`,
// truncated to `size` - 1 characters; returns its full length.
inline constexpr std::size_t kLayoutTextSize = 128;
std::size_t describe_layout(const LayoutParts& parts, char* buffer, std::size_t size) noexcept;

}  // namespace snowflake
