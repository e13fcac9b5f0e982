// The registry's statements as pure functions of a row: what the claim and
// the release (src/pg/registry/statements.hpp, the SQL the worker runs) do to
// the row of one identity and answer. The simulator (test/simulation/) runs
// its registry on these; a differential test there runs the SQL in a real
// PostgreSQL on the same random inputs and requires the same rows and
// answers, so the two cannot drift apart. The conditions are stated in
// src/pg/registry/claim.cpp.
//
// Who may take a row, in short:
//   - the same holder (same system identifier, timeline, host, data
//     directory and token: the same running postmaster) always: it renews;
//   - a successor (same system identifier and either a later timeline, or the
//     same timeline, host and data directory with another token: a restart of
//     the node, a promoted standby, a restored backup, a clone) only when the
//     row is released (a clean shutdown), stale (not renewed for two thirds of
//     its lease: the holder renews every third) or expired;
//   - anyone else only when the row is expired.
#pragma once

#include <cstdint>
#include <string>

namespace snowflake::registry_row {

// Who holds, or asks for, a row.
struct Holder {
  std::string system_identifier;  // decimal, as the numeric column
  int64_t timeline = 0;
  std::string host;
  std::string data_directory;
  // Drawn at random when the postmaster starts, never 0 there; 0 in a row
  // written by a node of 1.6 or earlier, or reserved by an administrator.
  int64_t token = 0;
  bool operator==(const Holder& other) const {
    return system_identifier == other.system_identifier && timeline == other.timeline &&
           host == other.host && data_directory == other.data_directory && token == other.token;
  }
};

enum class Relation : uint8_t {
  kSame,       // the same running postmaster
  kSuccessor,  // its system identifier: a later timeline, or the same place with another token
  kOther,
};

// What `claimant` is to the row's `holder`.
Relation relation(const Holder& holder, const Holder& claimant);

// One row. Times in microseconds since 1970, as the registry's timestamptz
// columns hold them.
struct Row {
  bool exists = false;
  Holder holder;
  int64_t claimed_at_us = 0;
  int64_t renewed_at_us = 0;
  int64_t expires_at_us = 0;
  int64_t ids_before_us = 0;
  bool has_inherited = false;  // inherited_ids_before IS NOT NULL
  int64_t inherited_ids_before_us = 0;
  bool released = false;  // its holder released it at a clean shutdown
  bool operator==(const Row& other) const;
};

// Whether the row's holder has stopped renewing at `now_us`: not renewed for
// more than two thirds of its lease (expires_at - renewed_at). The holder
// renews every third of it, so a live holder is stale only after missing a
// renewal and its retries for a whole third of the lease.
bool stale(const Row& row, int64_t now_us);

// Whether `claimant` may take (or renew) the row at `now_us`.
bool may_take(const Row& row, const Holder& claimant, int64_t now_us);

struct ClaimRequest {
  Holder self;
  int64_t lease_ms = 0;
  int64_t ids_before_ms = 0;  // lease::ids_before_to_report
  int64_t window_ms = 0;      // lease::window_ms
};

// The claim statement's answer (kClaim's one result row).
struct ClaimAnswer {
  bool claimed = false;
  Row row;                     // the row after the statement
  int64_t inherited_ms = -1;   // claimed: the largest ids_before of the holders before
  bool taken = false;          // claimed from another holder
  std::string taken_from;      // its host
  int64_t ids_before_ms = -1;  // claimed: the row's ids_before
  // The row before the statement: whether it existed, and its renewed_at
  // (what registry_history::row_change compares).
  bool existed = false;
  int64_t previous_renewed_at_us = 0;
};

// Claims or renews `row` for the request at the registry's `now_us`.
ClaimAnswer claim(Row& row, const ClaimRequest& request, int64_t now_us);

// The release at shutdown: the row's ids_before becomes ids_before_ms and the
// row is marked released, if it is still `self`'s (token included) and was
// last renewed at `renewed_at_us` (the renewal the releasing node last saw
// accepted). Whether it applied.
bool release(Row& row, const Holder& self, int64_t renewed_at_us, int64_t ids_before_ms);

}  // namespace snowflake::registry_row
