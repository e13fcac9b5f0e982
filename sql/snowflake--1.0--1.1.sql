-- snowflake 1.1: the SQL toolkit around the ID, and routing by ID.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.1'" to load this file. \quit

-- Routing by ID -------------------------------------------------------------

CREATE FUNCTION snowflake_node_hash(id bigint, seed bigint) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_node_hash'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_node_hash(bigint, bigint) IS
    'Extended hash of snowflake_node_ops: routes an ID to the hash partition whose remainder is its node number';

CREATE FUNCTION snowflake_node_hash32(id bigint) RETURNS integer
    AS 'MODULE_PATHNAME', 'snowflake_node_hash32'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_node_hash32(bigint) IS
    '32-bit hash of snowflake_node_ops (the low half of snowflake_node_hash)';

CREATE OPERATOR CLASS snowflake_node_ops FOR TYPE bigint USING hash AS
    OPERATOR 1 = (bigint, bigint),
    FUNCTION 1 snowflake_node_hash32(bigint),
    FUNCTION 2 snowflake_node_hash(bigint, bigint);

COMMENT ON OPERATOR CLASS snowflake_node_ops USING hash IS
    'PARTITION BY HASH (id snowflake_node_ops): partition remainder = the node (datacenter_id, worker_id) that issued the ID';
