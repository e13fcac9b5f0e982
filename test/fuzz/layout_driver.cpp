// The C++ side of the differential check of the layout arithmetic
// (layout_reference.py holds the other side and the protocol). Reads lines
//   SPEC|ID|TIMESTAMP|DATACENTER|WORKER|SEQUENCE|UNIX_MS|UNTIL|ID_BOUND
// and prints, for each, what parse_layout() and Layout answer: one line
// "problem P check C" for a text it refuses, else one line of key=value.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "layout_text.hpp"

namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t bar = line.find('|', start);
    parts.push_back(line.substr(start, bar == std::string::npos ? bar : bar - start));
    if (bar == std::string::npos) return parts;
    start = bar + 1;
  }
}

int64_t signed_of(const std::string& text) {
  return std::strtoll(text.c_str(), nullptr, 10);
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const std::vector<std::string> in = split(line);
    if (in.size() != 9) {
      std::fprintf(stderr, "layout_driver: expected 9 fields: %s\n", line.c_str());
      return 2;
    }
    const snowflake::ParsedLayout parsed = snowflake::parse_layout(in[0]);
    if (parsed.problem != snowflake::LayoutTextProblem::kOk) {
      std::printf("problem %d check %d\n", static_cast<int>(parsed.problem),
                  static_cast<int>(parsed.check));
      continue;
    }
    const snowflake::Layout layout(parsed.parts);
    char text[snowflake::kLayoutTextSize];
    snowflake::describe_layout(parsed.parts, text, sizeof text);
    std::printf("total=%d shift=%d max_ts=%" PRId64 " max_issued=%" PRId64 " last_unix=%" PRId64
                " last_issued_unix=%" PRId64 " max_node=%" PRId64,
                layout.total_bits(), layout.timestamp_shift(), layout.max_timestamp(),
                layout.max_issued_timestamp(), layout.last_unix_ms(), layout.last_issued_unix_ms(),
                layout.max_node());

    const int64_t id = signed_of(in[1]);
    if (layout.holds(id)) {
      const snowflake::Fields f = layout.decompose(id);
      std::printf(" decode=%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64, f.timestamp,
                  f.datacenter_id, f.worker_id, f.sequence);
    } else {
      std::printf(" decode=none");
    }
    const snowflake::Fields f{signed_of(in[2]), signed_of(in[3]), signed_of(in[4]),
                              signed_of(in[5])};
    const snowflake::FieldCheck field_check = layout.check_fields(f);
    if (field_check == snowflake::FieldCheck::kOk) {
      std::printf(" compose=%" PRId64 " node=%" PRId64 " min=%" PRId64 " max=%" PRId64,
                  layout.compose(f), layout.node(f.datacenter_id, f.worker_id),
                  layout.min_id(f.timestamp), layout.max_id(f.timestamp));
    } else {
      std::printf(" compose=field%d", static_cast<int>(field_check));
    }
    const int64_t unix_ms = signed_of(in[6]);
    std::printf(" at=%" PRId64 " from=%" PRId64, layout.timestamp_at_unix_ms(unix_ms),
                layout.timestamp_from_unix_ms(unix_ms));
    const int64_t until = signed_of(in[7]);
    const uint64_t id_bound = std::strtoull(in[8].c_str(), nullptr, 10);
    std::printf(" bound=%" PRIu64 " tbound=%" PRId64 " text=%s\n", layout.id_bound(until),
                layout.timestamp_bound(id_bound), text);
  }
  return 0;
}
