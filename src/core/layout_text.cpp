// Presets and the specification syntax (layout_text.hpp states the syntax).
//
// Each preset is taken from its system's own source or documentation; where
// the two disagree, the source (what the system's IDs really are) wins.
#include "layout_text.hpp"

#include <cstdio>

namespace snowflake {

namespace {

constexpr FieldOrder kSequenceAboveWorker{Field::kSequence, Field::kWorker, Field::kDatacenter};

// Widths, order, unit (ms), epoch (ms since 1970).
constexpr Preset kPresets[] = {
    {"twitter",
     "Twitter's IdWorker, also Hutool, MyBatis-Plus, bwmarrin/snowflake",
     {41, 5, 5, 12, kTwitterOrder, 1, 1288834974657}},
    {"leaf",
     "Meituan Leaf (its 10-bit worker ID in worker_id)",
     {41, 0, 10, 12, kTwitterOrder, 1, 1288834974657}},
    {"discord",
     "Discord (worker ID in datacenter_id, process ID in worker_id, the sign bit is time)",
     {42, 5, 5, 12, kTwitterOrder, 1, 1420070400000}},
    {"instagram",
     "Instagram (shard ID in worker_id, the sign bit is time)",
     {41, 0, 13, 10, kTwitterOrder, 1, 1314220021721}},
    {"sonyflake",
     "sony/sonyflake v1 (machine ID in worker_id, below the sequence)",
     {39, 0, 16, 8, kSequenceAboveWorker, 10, 1409529600000}},
    {"sonyflake_v2",
     "sony/sonyflake v2 with its default start time (machine ID in worker_id)",
     {39, 0, 16, 8, kSequenceAboveWorker, 10, 1735689600000}},
    {"baidu",
     "Baidu uid-generator's DefaultUidGenerator (seconds, worker ID in worker_id)",
     {28, 0, 22, 13, kTwitterOrder, 1000, 1463673600000}},
    {"mastodon",
     "Mastodon's timestamp_id (ms since 1970, no node field)",
     {48, 0, 0, 16, kTwitterOrder, 1, 0}},
    {"pgedge",
     "pgEdge snowflake 2.x (node number in worker_id)",
     {41, 0, 10, 12, kTwitterOrder, 1, 1672531200000}},
    {"javascript",
     "53 bits, exact as a JavaScript number: 32 nodes, 102,400 IDs/s each, to 2112",
     {38, 0, 5, 10, kTwitterOrder, 10, 1735689600000}},
};

constexpr bool every_preset_checks() {
  for (const Preset& preset : kPresets)
    if (Layout::check(preset.parts) != LayoutCheck::kOk) return false;
  return true;
}
static_assert(every_preset_checks(), "a preset that is not a valid layout");

bool is_separator(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',';
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); i++)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

// A whole number of at most `max_digits` digits, nothing else.
bool parse_number(std::string_view digits, std::size_t max_digits, int64_t* value) {
  if (digits.empty() || digits.size() > max_digits) return false;
  int64_t result = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    result = result * 10 + (c - '0');
  }
  *value = result;
  return true;
}

// "10ms", "1s": the unit in ms (unchecked against the range: Layout::check).
bool parse_unit(std::string_view text, int64_t* unit_ms) {
  int64_t factor = 1;
  std::size_t suffix = 0;
  if (text.size() > 2 && equals_ignoring_case(text.substr(text.size() - 2), "ms")) {
    suffix = 2;
  } else if (text.size() > 1 && lower(text.back()) == 's') {
    suffix = 1;
    factor = 1000;
  } else {
    return false;
  }
  int64_t count = 0;
  if (!parse_number(text.substr(0, text.size() - suffix), 7, &count)) return false;
  *unit_ms = count * factor;
  return true;
}

// INT64_MAX has 19 digits; a 19-digit number may still overflow.
bool parse_epoch(std::string_view text, int64_t* epoch_ms) {
  if (text.size() == 19 && text > std::string_view("9223372036854775807")) return false;
  return parse_number(text, 19, epoch_ms);
}

struct Item {
  std::string_view text;
  std::size_t position;
};

enum class Name { kTime, kDatacenter, kWorker, kSequence, kUnit, kEpoch, kUnknown };

Name name_of(std::string_view name) {
  constexpr std::string_view kNames[] = {"time",     "datacenter", "worker",
                                         "sequence", "unit",       "epoch"};
  for (std::size_t i = 0; i < sizeof(kNames) / sizeof(kNames[0]); i++)
    if (equals_ignoring_case(name, kNames[i])) return static_cast<Name>(i);
  return Name::kUnknown;
}

ParsedLayout fault(ParsedLayout parsed, LayoutTextProblem problem, const Item& item) {
  parsed.problem = problem;
  parsed.position = item.position;
  parsed.length = item.text.size();
  return parsed;
}

}  // namespace

const Preset* presets() noexcept {
  return kPresets;
}

std::size_t preset_count() noexcept {
  return sizeof(kPresets) / sizeof(kPresets[0]);
}

const Preset* find_preset(std::string_view name) noexcept {
  for (const Preset& preset : kPresets)
    if (equals_ignoring_case(name, preset.name)) return &preset;
  return nullptr;
}

ParsedLayout parse_layout(std::string_view text) noexcept {
  ParsedLayout parsed;
  // Where each field's item is (for faults in its width), and which fields
  // and options were given.
  Item field_items[4] = {};
  bool seen[6] = {};
  Field order[3] = {};
  int fields_below_time = 0;
  int width[4] = {0, 0, 0, 0};  // time, datacenter, worker, sequence
  bool any_item = false;

  std::size_t at = 0;
  while (at < text.size()) {
    if (is_separator(text[at])) {
      at++;
      continue;
    }
    std::size_t end = at;
    while (end < text.size() && !is_separator(text[end])) end++;
    const Item item{text.substr(at, end - at), at};
    at = end;

    const std::size_t colon = item.text.find(':');
    if (colon == std::string_view::npos) {
      if (any_item) return fault(parsed, LayoutTextProblem::kNotAnItem, item);
      parsed.preset = find_preset(item.text);
      if (parsed.preset == nullptr) return fault(parsed, LayoutTextProblem::kUnknownPreset, item);
      parsed.parts = parsed.preset->parts;
      any_item = true;
      continue;
    }
    any_item = true;
    const std::string_view value = item.text.substr(colon + 1);
    if (colon == 0 || value.empty()) return fault(parsed, LayoutTextProblem::kNotAnItem, item);
    const Name name = name_of(item.text.substr(0, colon));
    if (name == Name::kUnknown) return fault(parsed, LayoutTextProblem::kUnknownName, item);
    if (seen[static_cast<int>(name)]) return fault(parsed, LayoutTextProblem::kRepeated, item);
    seen[static_cast<int>(name)] = true;

    if (name == Name::kUnit) {
      if (!parse_unit(value, &parsed.parts.unit_ms))
        return fault(parsed, LayoutTextProblem::kBadUnit, item);
      continue;
    }
    if (name == Name::kEpoch) {
      if (!parse_epoch(value, &parsed.parts.epoch_ms))
        return fault(parsed, LayoutTextProblem::kBadEpoch, item);
      continue;
    }
    if (parsed.preset != nullptr) return fault(parsed, LayoutTextProblem::kFieldAfterPreset, item);
    if (name != Name::kTime && !seen[static_cast<int>(Name::kTime)])
      return fault(parsed, LayoutTextProblem::kTimeNotFirst, item);
    int64_t bits = 0;
    if (!parse_number(value, 3, &bits)) return fault(parsed, LayoutTextProblem::kBadWidth, item);
    const int index = static_cast<int>(name);  // kTime .. kSequence are 0 .. 3
    width[index] = static_cast<int>(bits);
    field_items[index] = item;
    if (name != Name::kTime) order[fields_below_time++] = static_cast<Field>(index - 1);
  }

  if (!any_item) {
    parsed.problem = LayoutTextProblem::kEmpty;
    parsed.position = text.size();
    return parsed;
  }
  if (parsed.preset == nullptr) {
    if (!seen[static_cast<int>(Name::kTime)] || !seen[static_cast<int>(Name::kSequence)]) {
      parsed.problem = seen[static_cast<int>(Name::kTime)] ? LayoutTextProblem::kNoSequence
                                                           : LayoutTextProblem::kNoTime;
      parsed.position = text.size();
      return parsed;
    }
    // The node fields left out take the places after those given.
    for (Field absent : {Field::kDatacenter, Field::kWorker}) {
      if (!seen[static_cast<int>(absent) + 1]) order[fields_below_time++] = absent;
    }
    parsed.parts.timestamp_bits = width[0];
    parsed.parts.datacenter_bits = width[1];
    parsed.parts.worker_bits = width[2];
    parsed.parts.sequence_bits = width[3];
    parsed.parts.order = FieldOrder{order[0], order[1], order[2]};
  }

  parsed.check = Layout::check(parsed.parts);
  if (parsed.check == LayoutCheck::kOk) return parsed;
  parsed.problem = LayoutTextProblem::kInvalidLayout;
  // Point at the item at fault: a width at its field, the unit or the epoch
  // at its option; a layout too wide or too long, at the whole text.
  const Item* culprit = nullptr;
  switch (parsed.check) {
    case LayoutCheck::kTimestampOutOfRange:
    case LayoutCheck::kTimeTooLong:
      culprit = &field_items[0];
      break;
    case LayoutCheck::kDatacenterOutOfRange:
      culprit = &field_items[1];
      break;
    case LayoutCheck::kWorkerOutOfRange:
      culprit = &field_items[2];
      break;
    case LayoutCheck::kSequenceOutOfRange:
      culprit = &field_items[3];
      break;
    default:
      break;
  }
  if (culprit != nullptr && !culprit->text.empty()) {
    parsed.position = culprit->position;
    parsed.length = culprit->text.size();
  } else {
    parsed.position = 0;
    parsed.length = text.size();
  }
  return parsed;
}

std::size_t describe_layout(const LayoutParts& parts, char* buffer, std::size_t size) noexcept {
  auto width_of = [&parts](Field field) {
    return field == Field::kDatacenter ? parts.datacenter_bits
           : field == Field::kWorker   ? parts.worker_bits
                                       : parts.sequence_bits;
  };
  auto name_of_field = [](Field field) {
    return field == Field::kDatacenter ? "datacenter"
           : field == Field::kWorker   ? "worker"
                                       : "sequence";
  };
  char fields[3][24] = {};
  int count = 0;
  for (Field field : {parts.order.first, parts.order.second, parts.order.third}) {
    if (width_of(field) == 0) continue;
    snprintf(fields[count++], sizeof(fields[0]), " %s:%d", name_of_field(field), width_of(field));
  }
  char unit[16];
  if (parts.unit_ms == 1000)
    snprintf(unit, sizeof(unit), "1s");
  else
    snprintf(unit, sizeof(unit), "%lldms", static_cast<long long>(parts.unit_ms));
  const int length =
      snprintf(buffer, size, "time:%d%s%s%s unit:%s epoch:%lld", parts.timestamp_bits, fields[0],
               fields[1], fields[2], unit, static_cast<long long>(parts.epoch_ms));
  return length < 0 ? 0 : static_cast<std::size_t>(length);
}

}  // namespace snowflake
