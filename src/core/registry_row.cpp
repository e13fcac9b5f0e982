// The claim and release statements as pure functions; registry_row.hpp says
// what they are for. Each line follows the SQL of
// src/pg/registry/statements.hpp clause by clause.
#include "registry_row.hpp"

#include <algorithm>

namespace snowflake::registry_row {

namespace {

// floor(extract(epoch FROM t) * 1000): microseconds to milliseconds, rounding down.
int64_t floor_ms(int64_t us) {
  return us >= 0 ? us / 1000 : -((-us + 999) / 1000);
}

}  // namespace

bool Row::operator==(const Row& other) const {
  return exists == other.exists && holder == other.holder && claimed_at_us == other.claimed_at_us &&
         renewed_at_us == other.renewed_at_us && expires_at_us == other.expires_at_us &&
         ids_before_us == other.ids_before_us && has_inherited == other.has_inherited &&
         (!has_inherited || inherited_ids_before_us == other.inherited_ids_before_us) &&
         released == other.released;
}

Relation relation(const Holder& holder, const Holder& claimant) {
  if (holder.system_identifier != claimant.system_identifier) return Relation::kOther;
  const bool same_place = holder.timeline == claimant.timeline && holder.host == claimant.host &&
                          holder.data_directory == claimant.data_directory;
  if (same_place && holder.token == claimant.token) return Relation::kSame;
  if (same_place || holder.timeline < claimant.timeline) return Relation::kSuccessor;
  return Relation::kOther;
}

// (now - renewed_at) * 3 > (expires_at - renewed_at) * 2, as the SQL compares intervals.
bool stale(const Row& row, int64_t now_us) {
  return (now_us - row.renewed_at_us) * 3 > (row.expires_at_us - row.renewed_at_us) * 2;
}

bool may_take(const Row& row, const Holder& claimant, int64_t now_us) {
  if (!row.exists || row.expires_at_us < now_us) return true;
  switch (relation(row.holder, claimant)) {
    case Relation::kSame:
      return true;
    case Relation::kSuccessor:
      return row.released || stale(row, now_us);
    default:
      return false;
  }
}

ClaimAnswer claim(Row& row, const ClaimRequest& request, int64_t now_us) {
  ClaimAnswer answer;
  const Holder& self = request.self;
  const int64_t expires_at = now_us + request.lease_ms * 1000;
  const int64_t ids_before = request.ids_before_ms * 1000;
  answer.existed = row.exists;
  answer.previous_renewed_at_us = row.exists ? row.renewed_at_us : 0;
  if (!row.exists) {
    // INSERT
    row.exists = true;
    row.holder = self;
    row.claimed_at_us = row.renewed_at_us = now_us;
    row.expires_at_us = expires_at;
    row.ids_before_us = ids_before;
    row.has_inherited = false;
    row.released = false;
  } else {
    const Holder& r = row.holder;
    const bool same = relation(r, self) == Relation::kSame;
    // ON CONFLICT DO UPDATE ... WHERE
    if (!may_take(row, self, now_us)) {
      answer.claimed = false;
      answer.row = row;
      return answer;
    }
    // greatest() ignores NULLs; NULL only when both are.
    bool has_inherited = row.has_inherited;
    int64_t inherited = row.inherited_ids_before_us;
    if (!same) {
      inherited = row.has_inherited ? std::max(row.ids_before_us, inherited) : row.ids_before_us;
      has_inherited = true;
    }
    if (!(row.expires_at_us >= now_us && same)) row.claimed_at_us = now_us;
    answer.taken = !same;
    answer.taken_from = r.host;
    // The same holder's ids_before never goes down (a late renewal).
    int64_t raised = same ? std::max(ids_before, row.ids_before_us) : ids_before;
    if (has_inherited) raised = std::max(raised, inherited + request.window_ms * 1000);
    row.ids_before_us = raised;
    row.has_inherited = has_inherited;
    row.inherited_ids_before_us = has_inherited ? inherited : 0;
    row.holder = self;
    row.renewed_at_us = now_us;
    row.expires_at_us = expires_at;
    row.released = false;
  }
  answer.claimed = true;
  answer.row = row;
  answer.inherited_ms = row.has_inherited ? floor_ms(row.inherited_ids_before_us) : -1;
  answer.ids_before_ms = floor_ms(row.ids_before_us);
  if (!answer.taken) answer.taken_from.clear();
  return answer;
}

bool release(Row& row, const Holder& self, int64_t renewed_at_us, int64_t ids_before_ms) {
  if (!row.exists || !(row.holder == self) || row.renewed_at_us != renewed_at_us) return false;
  row.ids_before_us = ids_before_ms * 1000;
  row.released = true;
  return true;
}

}  // namespace snowflake::registry_row
