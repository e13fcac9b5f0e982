// The lease decisions; lease.hpp states the rules.
#include "lease.hpp"

#include <algorithm>

namespace snowflake::lease {

Verdict may_issue(const Grant& grant, int64_t now_us, int64_t wanted) noexcept {
  if (!grant.held) return Verdict::kNotHeld;
  if (now_us >= grant.valid_until_us) return Verdict::kExpired;
  if (wanted >= 0 && grant.node != wanted) return Verdict::kOtherNode;
  return Verdict::kAllowed;
}

Verdict may_return(const Grant& grant, int64_t now_us, int64_t node, int64_t timestamp) noexcept {
  const Verdict lease = may_issue(grant, now_us, node);
  if (lease != Verdict::kAllowed) return lease;
  if (timestamp >= grant.ids_before) return Verdict::kAtCap;
  // A takeover by another holder, then this node's reclaim, raised the floor
  // after these IDs were reserved: the other holder may have issued them.
  if (timestamp < grant.floor) return Verdict::kBelowFloor;
  // A holder the registry forgot may have issued these (gap_after_change).
  if (timestamp >= grant.gap_from && timestamp < grant.gap_until) return Verdict::kInGap;
  return Verdict::kAllowed;
}

void gap_after_change(Grant* grant, int64_t floor, int64_t last_timestamp) noexcept {
  if (!grant->held || floor <= grant->ids_before) return;
  const bool pending = grant->gap_until > 0 && last_timestamp + 1 < grant->gap_until;
  grant->gap_from = pending ? std::min(grant->gap_from, grant->ids_before) : grant->ids_before;
  grant->gap_until = pending ? std::max(grant->gap_until, floor) : floor;
}

int64_t ids_before_to_report(int64_t clock_ms, int64_t last_id_ms, int64_t lease_ms,
                             int64_t max_lead_ms, int64_t cap_ms) noexcept {
  const int64_t latest = std::max(clock_ms, last_id_ms);
  return std::max(latest + window_ms(lease_ms, max_lead_ms), cap_ms);
}

}  // namespace snowflake::lease
