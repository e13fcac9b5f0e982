-- snowflake 1.0: issue and decode IDs.
\echo Use "CREATE EXTENSION snowflake" to load this file. \quit

CREATE FUNCTION snowflake_nextval() RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_nextval'
    LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_nextval() IS
    'Next ID of this node: unique, strictly increasing, time-ordered; never reissued';

CREATE FUNCTION snowflake_decode(
        id bigint,
        OUT ts timestamptz,
        OUT datacenter_id integer,
        OUT worker_id integer,
        OUT sequence integer)
    RETURNS record
    AS 'MODULE_PATHNAME', 'snowflake_decode'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_decode(bigint) IS
    'The parts of a snowflake ID: when it was issued, by which datacenter and worker, its sequence number';
