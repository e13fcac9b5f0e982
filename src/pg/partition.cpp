// Routing by ID: the hash support functions of the operator class
// snowflake_node_ops, for `PARTITION BY HASH (id snowflake_node_ops)`.
//
// PostgreSQL routes a row of a hash-partitioned table to the partition whose
// remainder is hash_combine64(0, h) % modulus, where h is the key's extended
// hash. These functions return h such that hash_combine64(0, h) is the ID's
// node field (datacenter_id << worker_bits | worker_id), so the partition
// `FOR VALUES WITH (MODULUS m, REMAINDER r)` holds exactly the IDs of the nodes
// n with n % m = r, and a lookup by ID prunes to one partition. Equal IDs hash
// equally, as a hash opclass must; but every ID of a node hashes alike, so the
// class is for partitioning, never for a hash index.
#include "boundary.hpp"
#include "settings.hpp"

namespace {

uint64 node_hash(int64 id) {
  // hash_combine64(0, h) = h + its constant, so subtract the constant.
  return static_cast<uint64>(snowflake::pg::settings.layout.node_of(id)) - hash_combine64(0, 0);
}

}  // namespace

SNOWFLAKE_FUNCTION(snowflake_node_hash) {
  PG_RETURN_INT64(static_cast<int64>(node_hash(PG_GETARG_INT64(0))));
}

// The 32-bit hash: the low half of the extended hash, as the opclass contract
// requires for seed 0.
SNOWFLAKE_FUNCTION(snowflake_node_hash32) {
  PG_RETURN_INT32(static_cast<int32>(static_cast<uint32>(node_hash(PG_GETARG_INT64(0)))));
}
