// The dump's carrier of the bound; carrier.hpp states the rules.
#include "carrier.hpp"

#include <algorithm>
#include <cstdint>

namespace snowflake::carrier {

int64_t of_bound(const Layout& layout, int64_t until) noexcept {
  if (until <= 0) return 0;
  const uint64_t id = layout.id_bound(std::min(until, layout.max_issued_timestamp() + 1));
  return id > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(id);
}

int64_t bound_of(const Layout& layout, int64_t carried) noexcept {
  if (carried <= 0) return 0;
  return layout.timestamp_bound(static_cast<uint64_t>(carried));
}

AfterRead after_read(const Layout& layout, int64_t written_until, int64_t carried,
                     int64_t carried_elsewhere, int64_t first_id) noexcept {
  AfterRead after;
  int64_t until = written_until;
  if (carried_elsewhere > of_bound(layout, written_until)) {
    after.adopt = true;
    after.adopt_until = bound_of(layout, carried_elsewhere);
    after.reserve_again = first_id < carried_elsewhere;
    until = std::max(until, after.adopt_until);
  }
  after.raise_to = of_bound(layout, until);
  after.covered_below = std::max(after.raise_to, carried);
  return after;
}

Admission admit(const Layout& layout, int64_t restored, int64_t written_until, bool may_give,
                int64_t clock_ms, int64_t max_lead_ms) noexcept {
  if (restored <= of_bound(layout, written_until)) return Admission::kCovered;
  if (may_give) return Admission::kTaken;
  // The last unit the restored IDs may be of, no further ahead than this
  // node's own generator could have run by now.
  const int64_t last_unit = bound_of(layout, restored) - 1;
  if (layout.start_ms(last_unit) <= clock_ms + max_lead_ms) return Admission::kTaken;
  return Admission::kRefused;
}

}  // namespace snowflake::carrier
