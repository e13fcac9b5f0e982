// libFuzzer target: the layout specification parser (src/core/layout_text.*).
//
// Any bytes go to parse_layout(). Whatever it answers must point inside the
// text; a layout it accepts must check, and its canonical text
// (describe_layout) must parse to the same layout and describe to the same
// text again, whole or truncated to any buffer; the text in upper case must
// parse to the same answer (names, presets and units are case-insensitive).
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "layout_text.hpp"

namespace {

using snowflake::Layout;
using snowflake::LayoutCheck;
using snowflake::LayoutTextProblem;
using snowflake::ParsedLayout;

bool same_parts(const snowflake::LayoutParts& a, const snowflake::LayoutParts& b) {
  return a.timestamp_bits == b.timestamp_bits && a.datacenter_bits == b.datacenter_bits &&
         a.worker_bits == b.worker_bits && a.sequence_bits == b.sequence_bits &&
         a.order.first == b.order.first && a.order.second == b.order.second &&
         a.order.third == b.order.third && a.unit_ms == b.unit_ms && a.epoch_ms == b.epoch_ms;
}

void check_canonical_text(const snowflake::LayoutParts& parts) {
  char text[snowflake::kLayoutTextSize];
  const size_t length = snowflake::describe_layout(parts, text, sizeof text);
  FUZZ_CHECK(length > 0 && length < sizeof text);
  FUZZ_CHECK(std::strlen(text) == length);

  const ParsedLayout again = snowflake::parse_layout(std::string_view(text, length));
  FUZZ_CHECK(again.problem == LayoutTextProblem::kOk);
  FUZZ_CHECK(again.preset == nullptr);
  FUZZ_CHECK(Layout(again.parts).same_as(Layout(parts)));
  char second[snowflake::kLayoutTextSize];
  FUZZ_CHECK(snowflake::describe_layout(again.parts, second, sizeof second) == length);
  FUZZ_CHECK(std::strcmp(text, second) == 0);

  // Truncated: a terminated prefix, nothing written past the buffer.
  for (size_t size = 0; size <= length + 1; size++) {
    char small[snowflake::kLayoutTextSize + 2];
    std::memset(small, '#', sizeof small);
    FUZZ_CHECK(snowflake::describe_layout(parts, small, size) == length);
    FUZZ_CHECK(small[size] == '#');
    if (size == 0) continue;
    const size_t kept = size - 1 < length ? size - 1 : length;
    FUZZ_CHECK(small[kept] == '\0' && std::memcmp(small, text, kept) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ParsedLayout parsed = snowflake::parse_layout(text);
  FUZZ_CHECK(parsed.position <= text.size());
  FUZZ_CHECK(parsed.length <= text.size() - parsed.position);

  std::string upper(text);
  for (char& c : upper)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  const ParsedLayout parsed_upper = snowflake::parse_layout(upper);
  FUZZ_CHECK(parsed_upper.problem == parsed.problem && parsed_upper.check == parsed.check);
  FUZZ_CHECK(parsed_upper.position == parsed.position && parsed_upper.length == parsed.length);
  FUZZ_CHECK(parsed_upper.preset == parsed.preset);

  if (parsed.problem != LayoutTextProblem::kOk) {
    FUZZ_CHECK((parsed.problem == LayoutTextProblem::kInvalidLayout) ==
               (parsed.check != LayoutCheck::kOk));
    FUZZ_CHECK(parsed.problem == LayoutTextProblem::kEmpty || parsed.length > 0 ||
               parsed.position == text.size());
    return 0;
  }
  FUZZ_CHECK(parsed.check == LayoutCheck::kOk);
  FUZZ_CHECK(Layout::check(parsed.parts) == LayoutCheck::kOk);
  FUZZ_CHECK(same_parts(parsed_upper.parts, parsed.parts));
  if (parsed.preset != nullptr) {
    FUZZ_CHECK(snowflake::find_preset(parsed.preset->name) == parsed.preset);
    const snowflake::LayoutParts& preset = parsed.preset->parts;
    FUZZ_CHECK(parsed.parts.timestamp_bits == preset.timestamp_bits &&
               parsed.parts.sequence_bits == preset.sequence_bits);
  }
  check_canonical_text(parsed.parts);
  return 0;
}
