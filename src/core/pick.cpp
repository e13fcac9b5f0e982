// The pick of automatic leasing; pick.hpp states the rule.
#include "pick.hpp"

#include <algorithm>
#include <cstring>

namespace snowflake::automatic {

namespace {

bool before(const Row& a, const Row& b) noexcept {
  return a.datacenter_id != b.datacenter_id ? a.datacenter_id < b.datacenter_id
                                            : a.worker_id < b.worker_id;
}

bool in_range(const Range& range, const Row& row) noexcept {
  return row.datacenter_id >= range.first_datacenter_id &&
         row.datacenter_id <= range.last_datacenter_id && row.worker_id >= 0 &&
         row.worker_id <= range.last_worker_id;
}

}  // namespace

Range range_of(const Layout& layout, int datacenter_id) noexcept {
  Range range;
  const bool one_datacenter = datacenter_id >= 0 || layout.datacenter_bits() == 0;
  range.first_datacenter_id = one_datacenter ? std::max(datacenter_id, 0) : 0;
  range.last_datacenter_id =
      one_datacenter ? range.first_datacenter_id : static_cast<int>(layout.max_datacenter_id());
  range.last_worker_id = static_cast<int>(layout.max_worker_id());
  return range;
}

bool is_mine(const HolderText& self, const Row& row) noexcept {
  const HolderText& holder = row.holder;
  if (std::strcmp(holder.system_identifier, self.system_identifier) != 0) return false;
  const bool same_place = holder.timeline == self.timeline &&
                          std::strcmp(holder.host, self.host) == 0 &&
                          std::strcmp(holder.data_directory, self.data_directory) == 0;
  if (same_place && holder.token == self.token) return true;  // the same holder
  if (!same_place && holder.timeline >= self.timeline) return false;
  return !row.live || row.released || row.stale;  // a successor's
}

Pick pick(const Range& range, const HolderText& self, Row* rows, size_t count) noexcept {
  Pick answer;
  if (range.first_datacenter_id > range.last_datacenter_id || range.last_worker_id < 0)
    return answer;
  std::sort(rows, rows + count, before);

  // 1. This node's row: the first live one, else the first.
  const Row* mine = nullptr;
  for (size_t i = 0; i < count; i++) {
    const Row& row = rows[i];
    if (!in_range(range, row) || !is_mine(self, row)) continue;
    if (mine == nullptr || row.live) mine = &row;
    if (row.live) break;
  }
  if (mine != nullptr) {
    answer.found = true;
    answer.datacenter_id = mine->datacenter_id;
    answer.worker_id = mine->worker_id;
    return answer;
  }

  // 2. The first gap among the live rows, in order.
  int datacenter = range.first_datacenter_id;
  int worker = 0;
  for (size_t i = 0; i < count && datacenter <= range.last_datacenter_id; i++) {
    const Row& row = rows[i];
    if (!row.live || !in_range(range, row)) continue;
    if (row.datacenter_id > datacenter ||
        (row.datacenter_id == datacenter && row.worker_id > worker))
      break;  // a gap before this row
    if (row.datacenter_id != datacenter || row.worker_id != worker)
      continue;  // behind: a duplicate
    if (++worker > range.last_worker_id) {
      worker = 0;
      datacenter++;
    }
  }
  // 3. None when the walk went past the last identity.
  answer.found = datacenter <= range.last_datacenter_id;
  answer.datacenter_id = answer.found ? datacenter : 0;
  answer.worker_id = answer.found ? worker : 0;
  return answer;
}

}  // namespace snowflake::automatic
