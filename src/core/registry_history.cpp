// The registry's history as a node sees it; registry_history.hpp states the rules.
#include "registry_history.hpp"

#include <algorithm>

namespace snowflake::registry_history {

unsigned compare(const Identity& remembered, const Identity& seen) noexcept {
  unsigned change = 0;
  if (remembered.system_identifier != 0 && seen.system_identifier != 0 &&
      remembered.system_identifier != seen.system_identifier)
    change |= kSystemChanged;
  if (remembered.timeline != 0 && seen.timeline != 0 && remembered.timeline != seen.timeline)
    change |= kTimelineChanged;
  if (remembered.table != 0 && seen.table != 0 && remembered.table != seen.table)
    change |= kTableChanged;
  return change;
}

Identity merge(const Identity& remembered, const Identity& seen) noexcept {
  Identity merged = remembered;
  if (seen.system_identifier != 0) merged.system_identifier = seen.system_identifier;
  if (seen.timeline != 0) merged.timeline = seen.timeline;
  if (seen.table != 0) merged.table = seen.table;
  return merged;
}

unsigned row_change(int64_t seen_renewed_at_us, const RowBefore& before) noexcept {
  if (seen_renewed_at_us == 0) return 0;
  if (!before.existed) return kRowGone;
  return before.renewed_at_us < seen_renewed_at_us ? unsigned{kRowOlder} : 0u;
}

int64_t floor_after_change(int64_t now_ms, int64_t longest_lease_ms, int64_t lease_ms,
                           int64_t max_lead_ms) noexcept {
  const int64_t lease =
      std::clamp<int64_t>(std::max(longest_lease_ms, lease_ms), 0, kLongestLeaseMs);
  return now_ms + lease + std::max<int64_t>(max_lead_ms, 0) + 1;
}

void seen_change(Memory* memory, int64_t now_ms, int64_t lease_ms, int64_t max_lead_ms) noexcept {
  memory->changed_at_ms = now_ms;
  memory->floor_ms = std::max(memory->floor_ms, floor_after_change(now_ms, memory->longest_lease_ms,
                                                                   lease_ms, max_lead_ms));
}

void seen_lease(Memory* memory, int64_t longest_lease_ms) noexcept {
  if (longest_lease_ms > 0)
    memory->longest_lease_ms = std::min<int64_t>(longest_lease_ms, kLongestLeaseMs);
}

}  // namespace snowflake::registry_history
