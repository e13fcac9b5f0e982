// The bit layout of a snowflake ID and the arithmetic on it.
//
// An ID is a positive 63-bit integer, most significant field first:
//
//   timestamp (ms since the layout's epoch) | datacenter_id | worker_id | sequence
//
// datacenter_id and worker_id together form the node; the generator treats
// the node as one field. The default layout is Twitter's: 41 | 5 | 5 | 12
// with epoch 1288834974657 ms after the Unix epoch.
//
// Pure C++17, no PostgreSQL header; every function is noexcept and reports
// problems as values.
#pragma once

#include <cstdint>

namespace snowflake {

inline constexpr int kIdBits = 63;
inline constexpr int kDefaultTimestampBits = 41;
inline constexpr int kDefaultDatacenterBits = 5;
inline constexpr int kDefaultWorkerBits = 5;
inline constexpr int kDefaultSequenceBits = 12;
// 2010-11-04 01:42:54.657 UTC: the epoch of Twitter's original IdWorker.
inline constexpr int64_t kDefaultEpochMs = 1288834974657;

// Field widths a layout may use. datacenter_bits may be 0 (one flat node
// field); the node fields stay narrow enough to fit an int GUC.
inline constexpr int kMaxNodeFieldBits = 30;

enum class LayoutCheck {
  kOk,
  kWrongTotal,            // the four widths do not add up to 63
  kTimestampOutOfRange,   // timestamp_bits outside 1..61
  kDatacenterOutOfRange,  // datacenter_bits outside 0..30
  kWorkerOutOfRange,      // worker_bits outside 1..30
  kSequenceOutOfRange,    // sequence_bits outside 1..61
};

// Which field of a composed ID is out of range, if any.
enum class FieldCheck { kOk, kTimestamp, kDatacenter, kWorker, kSequence };

struct Fields {
  int64_t timestamp;  // ms since the layout's epoch
  int64_t datacenter_id;
  int64_t worker_id;
  int64_t sequence;
};

class Layout {
 public:
  // The default layout and epoch.
  constexpr Layout() noexcept
      : Layout(kDefaultTimestampBits, kDefaultDatacenterBits, kDefaultWorkerBits,
               kDefaultSequenceBits, kDefaultEpochMs) {}

  // Precondition: check(...) == LayoutCheck::kOk.
  constexpr Layout(int timestamp_bits, int datacenter_bits, int worker_bits, int sequence_bits,
                   int64_t epoch_ms) noexcept
      : timestamp_bits_(timestamp_bits),
        datacenter_bits_(datacenter_bits),
        worker_bits_(worker_bits),
        sequence_bits_(sequence_bits),
        epoch_ms_(epoch_ms) {}

  static constexpr LayoutCheck check(int timestamp_bits, int datacenter_bits, int worker_bits,
                                     int sequence_bits) noexcept {
    // Each width is bounded first, so the sum below cannot overflow.
    if (timestamp_bits < 1 || timestamp_bits > kIdBits - 2)
      return LayoutCheck::kTimestampOutOfRange;
    if (datacenter_bits < 0 || datacenter_bits > kMaxNodeFieldBits)
      return LayoutCheck::kDatacenterOutOfRange;
    if (worker_bits < 1 || worker_bits > kMaxNodeFieldBits) return LayoutCheck::kWorkerOutOfRange;
    if (sequence_bits < 1 || sequence_bits > kIdBits - 2) return LayoutCheck::kSequenceOutOfRange;
    if (timestamp_bits + datacenter_bits + worker_bits + sequence_bits != kIdBits)
      return LayoutCheck::kWrongTotal;
    return LayoutCheck::kOk;
  }

  constexpr int timestamp_bits() const noexcept { return timestamp_bits_; }
  constexpr int datacenter_bits() const noexcept { return datacenter_bits_; }
  constexpr int worker_bits() const noexcept { return worker_bits_; }
  constexpr int sequence_bits() const noexcept { return sequence_bits_; }
  constexpr int node_bits() const noexcept { return datacenter_bits_ + worker_bits_; }
  constexpr int64_t epoch_ms() const noexcept { return epoch_ms_; }

  constexpr int64_t max_timestamp() const noexcept { return mask(timestamp_bits_); }
  constexpr int64_t max_datacenter_id() const noexcept { return mask(datacenter_bits_); }
  constexpr int64_t max_worker_id() const noexcept { return mask(worker_bits_); }
  constexpr int64_t max_node() const noexcept { return mask(node_bits()); }
  constexpr int64_t max_sequence() const noexcept { return mask(sequence_bits_); }
  // The last millisecond the layout can represent, in ms since the Unix epoch.
  constexpr int64_t last_unix_ms() const noexcept { return epoch_ms_ + max_timestamp(); }

  // The node number of (datacenter_id, worker_id); both must be in range.
  constexpr int64_t node(int64_t datacenter_id, int64_t worker_id) const noexcept {
    return datacenter_id << worker_bits_ | worker_id;
  }

  // Precondition: every field in range (see check_fields).
  constexpr int64_t compose(int64_t timestamp, int64_t node, int64_t sequence) const noexcept {
    return timestamp << (node_bits() + sequence_bits_) | node << sequence_bits_ | sequence;
  }
  constexpr int64_t compose(const Fields& f) const noexcept {
    return compose(f.timestamp, node(f.datacenter_id, f.worker_id), f.sequence);
  }

  // Precondition for the accessors below: id >= 0.
  constexpr int64_t timestamp_of(int64_t id) const noexcept {
    return id >> (node_bits() + sequence_bits_);
  }
  constexpr int64_t node_of(int64_t id) const noexcept {
    return (id >> sequence_bits_) & max_node();
  }
  constexpr int64_t sequence_of(int64_t id) const noexcept { return id & max_sequence(); }
  constexpr Fields decompose(int64_t id) const noexcept {
    const int64_t n = node_of(id);
    return Fields{timestamp_of(id), n >> worker_bits_, n & max_worker_id(), sequence_of(id)};
  }

  constexpr FieldCheck check_fields(const Fields& f) const noexcept {
    if (f.timestamp < 0 || f.timestamp > max_timestamp()) return FieldCheck::kTimestamp;
    if (f.datacenter_id < 0 || f.datacenter_id > max_datacenter_id())
      return FieldCheck::kDatacenter;
    if (f.worker_id < 0 || f.worker_id > max_worker_id()) return FieldCheck::kWorker;
    if (f.sequence < 0 || f.sequence > max_sequence()) return FieldCheck::kSequence;
    return FieldCheck::kOk;
  }

  // A bound on timestamps ("every ID is of a millisecond before `until`") as a
  // bound on IDs ("every ID is below"), and back. IDs compare as numbers
  // whatever the layout and epoch that made them, so this form stays true
  // when either changes. It needs 64 bits: the layout's end is 2^63.
  constexpr uint64_t id_bound(int64_t until) const noexcept {
    return static_cast<uint64_t>(until) << (node_bits() + sequence_bits_);
  }
  constexpr int64_t timestamp_bound(uint64_t id_bound) const noexcept {
    const int shift = node_bits() + sequence_bits_;
    const uint64_t end = static_cast<uint64_t>(max_timestamp()) + 1;
    if (id_bound >= end << shift) return static_cast<int64_t>(end);
    return static_cast<int64_t>((id_bound + (uint64_t{1} << shift) - 1) >> shift);
  }

  // The smallest and the largest ID any node can issue in one millisecond.
  constexpr int64_t min_id(int64_t timestamp) const noexcept { return compose(timestamp, 0, 0); }
  constexpr int64_t max_id(int64_t timestamp) const noexcept {
    return compose(timestamp, max_node(), max_sequence());
  }

 private:
  static constexpr int64_t mask(int bits) noexcept {
    return bits >= 63 ? INT64_MAX : (int64_t{1} << bits) - 1;
  }

  int timestamp_bits_;
  int datacenter_bits_;
  int worker_bits_;
  int sequence_bits_;
  int64_t epoch_ms_;
};

}  // namespace snowflake
