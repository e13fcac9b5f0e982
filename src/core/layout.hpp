// The bit layout of a snowflake ID and the arithmetic on it: the one layout
// model that every SQL function, the generator and the settings use.
//
// An ID is an unsigned number of up to 64 bits, kept in a bigint. Its most
// significant field is always the timestamp, counted in the layout's time
// unit (1 ms by default; Sonyflake counts 10 ms, Baidu's uid-generator whole
// seconds) since the layout's epoch. Below it come, in the layout's order,
// datacenter_id, worker_id and the sequence; a node field may be absent
// (0 bits). The default layout is Twitter's:
//
//   timestamp 41 | datacenter_id 5 | worker_id 5 | sequence 12, 1 ms,
//   epoch 1288834974657 ms after the Unix epoch
//
// Sonyflake's puts the sequence above the node: timestamp 39 | sequence 8 |
// worker_id 16, in units of 10 ms. Fields that add up to fewer than 63 bits
// give IDs that fit in that many bits (53: JavaScript's exact integers). In a
// 64-bit layout (Discord, Instagram, Mastodon) the timestamp's top bit is
// the bigint's sign bit: such IDs decode and compose over the whole field,
// negative bigints included, but a generator issues only the positive ones
// (max_issued_timestamp), so that its IDs keep increasing as numbers.
//
// datacenter_id and worker_id together form the node number
// (datacenter_id << worker_bits | worker_id), which the generator treats as
// one value; where each part lands in the ID is the layout's business.
//
// Pure C++17, no PostgreSQL header; every function is noexcept and reports
// problems as values. Text forms (presets and specifications) are in
// layout_text.hpp.
#pragma once

#include <cstdint>

namespace snowflake {

inline constexpr int kMaxIdBits = 64;
inline constexpr int kDefaultTimestampBits = 41;
inline constexpr int kDefaultDatacenterBits = 5;
inline constexpr int kDefaultWorkerBits = 5;
inline constexpr int kDefaultSequenceBits = 12;
// 2010-11-04 01:42:54.657 UTC: the epoch of Twitter's original IdWorker.
inline constexpr int64_t kDefaultEpochMs = 1288834974657;

// Field widths a layout may use: the one statement of these rules, which the
// settings, the layout texts and their messages use. The time field holds at
// most 62 bits: its last unit must be a count of milliseconds in 64 bits
// (2^63 ms of a 1 ms unit is one past it), and a wider unit or a later epoch
// can shorten that further (LayoutCheck::kTimeTooLong). The node fields stay
// narrow enough to fit an int setting, the sequence to fit decode's integer
// column.
inline constexpr int kMinTimestampBits = 1;
inline constexpr int kMaxTimestampBits = 62;
inline constexpr int kMinNodeFieldBits = 0;
inline constexpr int kMaxNodeFieldBits = 30;
inline constexpr int kMinSequenceBits = 1;
inline constexpr int kMaxSequenceBits = 31;
// The time unit, in whole milliseconds.
inline constexpr int64_t kMaxUnitMs = 1000;

// The fields below the timestamp.
enum class Field : uint8_t { kDatacenter, kWorker, kSequence };

// The order of the fields below the timestamp, most significant first.
struct FieldOrder {
  Field first;
  Field second;
  Field third;
};
inline constexpr FieldOrder kTwitterOrder{Field::kDatacenter, Field::kWorker, Field::kSequence};

// Everything that defines a layout.
struct LayoutParts {
  int timestamp_bits = kDefaultTimestampBits;
  int datacenter_bits = kDefaultDatacenterBits;
  int worker_bits = kDefaultWorkerBits;
  int sequence_bits = kDefaultSequenceBits;
  FieldOrder order = kTwitterOrder;
  int64_t unit_ms = 1;
  int64_t epoch_ms = kDefaultEpochMs;
};

enum class LayoutCheck {
  kOk,
  kTooWide,               // the widths add up to more than 64 bits
  kTimestampOutOfRange,   // timestamp_bits outside kMinTimestampBits..kMaxTimestampBits (1..62)
  kDatacenterOutOfRange,  // datacenter_bits outside 0..30
  kWorkerOutOfRange,      // worker_bits outside 0..30
  kSequenceOutOfRange,    // sequence_bits outside 1..31
  kUnitOutOfRange,        // unit_ms outside 1..1000
  kEpochOutOfRange,       // epoch_ms negative
  kTimeTooLong,           // the field's last time is past the range of ms since 1970 in int64
  kOrderInvalid,          // the order does not name each field once
};

// Which field of a composed ID is out of range, if any.
enum class FieldCheck { kOk, kTimestamp, kDatacenter, kWorker, kSequence };

struct Fields {
  int64_t timestamp;  // in the layout's units since its epoch
  int64_t datacenter_id;
  int64_t worker_id;
  int64_t sequence;
};

class Layout {
 public:
  // The default layout and epoch.
  constexpr Layout() noexcept : Layout(LayoutParts{}) {}

  // Twitter's field order and a 1 ms unit, with these widths and epoch.
  // Precondition: check(...) == LayoutCheck::kOk.
  constexpr Layout(int timestamp_bits, int datacenter_bits, int worker_bits, int sequence_bits,
                   int64_t epoch_ms) noexcept
      : Layout(LayoutParts{timestamp_bits, datacenter_bits, worker_bits, sequence_bits,
                           kTwitterOrder, 1, epoch_ms}) {}

  // Precondition: check(parts) == LayoutCheck::kOk.
  constexpr explicit Layout(const LayoutParts& parts) noexcept
      : parts_(parts),
        datacenter_shift_(shift_of(parts, Field::kDatacenter)),
        worker_shift_(shift_of(parts, Field::kWorker)),
        sequence_shift_(shift_of(parts, Field::kSequence)),
        timestamp_shift_(parts.datacenter_bits + parts.worker_bits + parts.sequence_bits) {}

  static constexpr LayoutCheck check(const LayoutParts& parts) noexcept {
    // Each width is bounded first, so the sums below cannot overflow.
    if (parts.timestamp_bits < kMinTimestampBits || parts.timestamp_bits > kMaxTimestampBits)
      return LayoutCheck::kTimestampOutOfRange;
    if (parts.datacenter_bits < kMinNodeFieldBits || parts.datacenter_bits > kMaxNodeFieldBits)
      return LayoutCheck::kDatacenterOutOfRange;
    if (parts.worker_bits < kMinNodeFieldBits || parts.worker_bits > kMaxNodeFieldBits)
      return LayoutCheck::kWorkerOutOfRange;
    if (parts.sequence_bits < kMinSequenceBits || parts.sequence_bits > kMaxSequenceBits)
      return LayoutCheck::kSequenceOutOfRange;
    if (parts.timestamp_bits + parts.datacenter_bits + parts.worker_bits + parts.sequence_bits >
        kMaxIdBits)
      return LayoutCheck::kTooWide;
    if (parts.unit_ms < 1 || parts.unit_ms > kMaxUnitMs) return LayoutCheck::kUnitOutOfRange;
    if (parts.epoch_ms < 0) return LayoutCheck::kEpochOutOfRange;
    // epoch + 2^timestamp_bits * unit <= INT64_MAX, without overflowing.
    if ((INT64_MAX - parts.epoch_ms) / parts.unit_ms < (int64_t{1} << parts.timestamp_bits))
      return LayoutCheck::kTimeTooLong;
    const FieldOrder& o = parts.order;
    if (o.first == o.second || o.first == o.third || o.second == o.third)
      return LayoutCheck::kOrderInvalid;
    return LayoutCheck::kOk;
  }
  // Twitter's order, a 1 ms unit and the default epoch, with these widths.
  static constexpr LayoutCheck check(int timestamp_bits, int datacenter_bits, int worker_bits,
                                     int sequence_bits) noexcept {
    return check(LayoutParts{timestamp_bits, datacenter_bits, worker_bits, sequence_bits});
  }

  constexpr int timestamp_bits() const noexcept { return parts_.timestamp_bits; }
  constexpr int datacenter_bits() const noexcept { return parts_.datacenter_bits; }
  constexpr int worker_bits() const noexcept { return parts_.worker_bits; }
  constexpr int sequence_bits() const noexcept { return parts_.sequence_bits; }
  constexpr int node_bits() const noexcept { return parts_.datacenter_bits + parts_.worker_bits; }
  // How many bits the IDs use: they lie below 2^total_bits.
  constexpr int total_bits() const noexcept { return timestamp_shift_ + parts_.timestamp_bits; }
  // Where the timestamp starts: id >> timestamp_shift() is the timestamp.
  constexpr int timestamp_shift() const noexcept { return timestamp_shift_; }
  constexpr int64_t unit_ms() const noexcept { return parts_.unit_ms; }
  constexpr const LayoutParts& parts() const noexcept { return parts_; }
  constexpr int64_t epoch_ms() const noexcept { return parts_.epoch_ms; }
  // Whether the two layouts issue and read the same IDs: the same fields in
  // the same places, unit and epoch (where an absent field is does not matter).
  constexpr bool same_as(const Layout& other) const noexcept {
    return timestamp_bits() == other.timestamp_bits() &&
           datacenter_bits() == other.datacenter_bits() && worker_bits() == other.worker_bits() &&
           sequence_bits() == other.sequence_bits() &&
           (datacenter_bits() == 0 || datacenter_shift_ == other.datacenter_shift_) &&
           (worker_bits() == 0 || worker_shift_ == other.worker_shift_) &&
           sequence_shift_ == other.sequence_shift_ && unit_ms() == other.unit_ms() &&
           epoch_ms() == other.epoch_ms();
  }

  constexpr int64_t max_timestamp() const noexcept { return mask(parts_.timestamp_bits); }
  constexpr int64_t max_datacenter_id() const noexcept { return mask(parts_.datacenter_bits); }
  constexpr int64_t max_worker_id() const noexcept { return mask(parts_.worker_bits); }
  constexpr int64_t max_node() const noexcept { return mask(node_bits()); }
  constexpr int64_t max_sequence() const noexcept { return mask(parts_.sequence_bits); }
  // The last timestamp whose IDs are positive bigints: a generator issues no
  // later one. max_timestamp() unless the layout has 64 bits.
  constexpr int64_t max_issued_timestamp() const noexcept {
    const int64_t positive = INT64_MAX >> timestamp_shift_;
    return positive < max_timestamp() ? positive : max_timestamp();
  }

  // Time. A timestamp stands for the unit that starts start_ms(timestamp) ms
  // after the epoch; the conversions cannot overflow (check: kTimeTooLong).
  constexpr int64_t start_ms(int64_t timestamp) const noexcept {
    return timestamp * parts_.unit_ms;
  }
  // The unit that holds `ms` (ms since the epoch; before it, a negative unit).
  constexpr int64_t timestamp_at(int64_t ms) const noexcept {
    if (parts_.unit_ms == 1) return ms;
    return ms / parts_.unit_ms - (ms % parts_.unit_ms < 0 ? 1 : 0);
  }
  // The first unit that starts at or after `ms` (ms since the epoch).
  constexpr int64_t timestamp_from(int64_t ms) const noexcept {
    if (parts_.unit_ms == 1) return ms;
    return ms / parts_.unit_ms + (ms % parts_.unit_ms > 0 ? 1 : 0);
  }
  // The same in ms since 1970.
  constexpr int64_t unix_ms(int64_t timestamp) const noexcept {
    return parts_.epoch_ms + start_ms(timestamp);
  }
  constexpr int64_t timestamp_at_unix_ms(int64_t unix_ms) const noexcept {
    return timestamp_at(unix_ms - parts_.epoch_ms);
  }
  constexpr int64_t timestamp_from_unix_ms(int64_t unix_ms) const noexcept {
    return timestamp_from(unix_ms - parts_.epoch_ms);
  }
  // The last time the field can hold, and the last one a generator issues, in
  // ms since 1970.
  constexpr int64_t last_unix_ms() const noexcept { return unix_ms(max_timestamp()); }
  constexpr int64_t last_issued_unix_ms() const noexcept { return unix_ms(max_issued_timestamp()); }

  // A span of `units` units of time as a difference of IDs: how far apart the
  // smallest IDs of two units `units` apart are. Spans up to max_span() keep
  // the difference a positive bigint; a longer one would reach the sign bit
  // (in a 64-bit layout) and is no span between IDs a generator issues.
  constexpr int64_t max_span() const noexcept { return max_issued_timestamp(); }
  // Precondition: 0 <= units <= max_span().
  constexpr int64_t span_ids(int64_t units) const noexcept {
    return static_cast<int64_t>(static_cast<uint64_t>(units) << timestamp_shift_);
  }

  // The node number of (datacenter_id, worker_id); both must be in range.
  constexpr int64_t node(int64_t datacenter_id, int64_t worker_id) const noexcept {
    return datacenter_id << parts_.worker_bits | worker_id;
  }

  // Precondition: every field in range (see check_fields).
  constexpr int64_t compose(int64_t timestamp, int64_t node, int64_t sequence) const noexcept {
    return static_cast<int64_t>(static_cast<uint64_t>(timestamp) << timestamp_shift_ |
                                node_bits_in_id(node) |
                                static_cast<uint64_t>(sequence) << sequence_shift_);
  }
  constexpr int64_t compose(const Fields& f) const noexcept {
    return compose(f.timestamp, node(f.datacenter_id, f.worker_id), f.sequence);
  }
  // Where the node's bits lie in its IDs.
  constexpr uint64_t node_bits_in_id(int64_t node) const noexcept {
    return static_cast<uint64_t>(node >> parts_.worker_bits) << datacenter_shift_ |
           static_cast<uint64_t>(node & max_worker_id()) << worker_shift_;
  }
  // IDs of one node in one unit, at consecutive sequence values, are this far apart.
  constexpr int64_t sequence_step() const noexcept { return int64_t{1} << sequence_shift_; }

  // Whether `id` is one of the layout's IDs: below 2^total_bits() as an
  // unsigned number (so negative only in a 64-bit layout).
  constexpr bool holds(int64_t id) const noexcept {
    return total_bits() == kMaxIdBits || (static_cast<uint64_t>(id) >> total_bits()) == 0;
  }
  // Precondition for the accessors below: holds(id).
  constexpr int64_t timestamp_of(int64_t id) const noexcept {
    return static_cast<int64_t>(static_cast<uint64_t>(id) >> timestamp_shift_);
  }
  constexpr int64_t datacenter_of(int64_t id) const noexcept {
    return (id >> datacenter_shift_) & max_datacenter_id();
  }
  constexpr int64_t worker_of(int64_t id) const noexcept {
    return (id >> worker_shift_) & max_worker_id();
  }
  constexpr int64_t node_of(int64_t id) const noexcept {
    return node(datacenter_of(id), worker_of(id));
  }
  constexpr int64_t sequence_of(int64_t id) const noexcept {
    return (id >> sequence_shift_) & max_sequence();
  }
  constexpr Fields decompose(int64_t id) const noexcept {
    return Fields{timestamp_of(id), datacenter_of(id), worker_of(id), sequence_of(id)};
  }

  constexpr FieldCheck check_fields(const Fields& f) const noexcept {
    if (f.timestamp < 0 || f.timestamp > max_timestamp()) return FieldCheck::kTimestamp;
    if (f.datacenter_id < 0 || f.datacenter_id > max_datacenter_id())
      return FieldCheck::kDatacenter;
    if (f.worker_id < 0 || f.worker_id > max_worker_id()) return FieldCheck::kWorker;
    if (f.sequence < 0 || f.sequence > max_sequence()) return FieldCheck::kSequence;
    return FieldCheck::kOk;
  }

  // The bits of an ID below its timestamp that lie above the sequence, and
  // those below it: node fields on either side of the sequence (the
  // generator compares a node with the last ID's in these two parts).
  constexpr uint64_t bits_above_sequence() const noexcept {
    return low_mask(timestamp_shift_) & ~low_mask(sequence_shift_ + parts_.sequence_bits);
  }
  constexpr uint64_t bits_below_sequence() const noexcept { return low_mask(sequence_shift_); }

  // A bound on timestamps ("every ID is of a unit before `until`") as a bound
  // on IDs ("every ID is below"), and back. IDs compare as numbers whatever
  // the layout, unit and epoch that made them (the timestamp is always the
  // top field), so this form stays true when any of them changes. It needs 64
  // bits: the end of issued IDs is 2^63. Precondition: until <=
  // max_issued_timestamp() + 1.
  constexpr uint64_t id_bound(int64_t until) const noexcept {
    return static_cast<uint64_t>(until) << timestamp_shift_;
  }
  constexpr int64_t timestamp_bound(uint64_t id_bound) const noexcept {
    const uint64_t end = static_cast<uint64_t>(max_issued_timestamp()) + 1;
    if (id_bound >= end << timestamp_shift_) return static_cast<int64_t>(end);
    return static_cast<int64_t>((id_bound + (uint64_t{1} << timestamp_shift_) - 1) >>
                                timestamp_shift_);
  }

  // The smallest and the largest ID any node can issue in one unit of time.
  constexpr int64_t min_id(int64_t timestamp) const noexcept {
    return static_cast<int64_t>(static_cast<uint64_t>(timestamp) << timestamp_shift_);
  }
  constexpr int64_t max_id(int64_t timestamp) const noexcept {
    return static_cast<int64_t>(static_cast<uint64_t>(min_id(timestamp)) |
                                low_mask(timestamp_shift_));
  }

 private:
  static constexpr int64_t mask(int bits) noexcept {
    return bits >= 63 ? INT64_MAX : (int64_t{1} << bits) - 1;
  }
  static constexpr uint64_t low_mask(int bits) noexcept {
    return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  }
  static constexpr int width_of(const LayoutParts& parts, Field field) noexcept {
    return field == Field::kDatacenter ? parts.datacenter_bits
           : field == Field::kWorker   ? parts.worker_bits
                                       : parts.sequence_bits;
  }
  // How far above bit 0 `field` starts: the widths of the fields after it.
  static constexpr int shift_of(const LayoutParts& parts, Field field) noexcept {
    const FieldOrder& o = parts.order;
    if (field == o.third) return 0;
    if (field == o.second) return width_of(parts, o.third);
    return width_of(parts, o.second) + width_of(parts, o.third);
  }

  LayoutParts parts_;
  int datacenter_shift_;
  int worker_shift_;
  int sequence_shift_;
  int timestamp_shift_;
};

}  // namespace snowflake
