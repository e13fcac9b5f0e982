-- snowflake 1.6.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.6'" to load this file. \quit

-- Waits for the durable bound in snowflake_status and snowflake_backend_status
-- (issue 28) ------------------------------------------------------------------
-- Both gain two last columns: durable_waits, the calls that waited for a new
-- durable bound to be written to WAL and the state file (and confirmed by the
-- synchronous standbys), and durable_wait_ms, the time those waits took. A
-- function's columns cannot change in place: the views and their functions
-- are made again, with the privileges the extension grants (as 1.5 did for
-- snowflake_status); a privilege granted on a view by hand must be granted
-- again.

DROP VIEW snowflake_status;
DROP FUNCTION snowflake_status();

CREATE FUNCTION snowflake_status(
        OUT datacenter_id integer,
        OUT worker_id integer,
        OUT epoch timestamptz,
        OUT timestamp_bits integer,
        OUT datacenter_bits integer,
        OUT worker_bits integer,
        OUT sequence_bits integer,
        OUT last_issued_at timestamptz,
        OUT lead_ms bigint,
        OUT ids_issued bigint,
        OUT sequence_waits bigint,
        OUT clock_waits bigint,
        OUT clock_errors bigint,
        OUT clock_steps bigint,
        OUT largest_clock_step_ms bigint,
        OUT durable_until timestamptz,
        OUT layout text,
        OUT durable_waits bigint,
        OUT durable_wait_ms bigint)
    RETURNS record
    AS 'MODULE_PATHNAME', 'snowflake_status'
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_status() IS
    'The node''s generator: identity, layout, position, counters and durable bound (needs SELECT on snowflake_status)';

CREATE VIEW snowflake_status AS SELECT * FROM snowflake_status();

COMMENT ON VIEW snowflake_status IS
    'One row: this node''s snowflake generator';

DROP VIEW snowflake_backend_status;
DROP FUNCTION snowflake_backend_status();

CREATE FUNCTION snowflake_backend_status(
        OUT pid integer,
        OUT ids_issued bigint,
        OUT sequence_waits bigint,
        OUT clock_waits bigint,
        OUT clock_errors bigint,
        OUT clock_steps bigint,
        OUT largest_clock_step_ms bigint,
        OUT durable_waits bigint,
        OUT durable_wait_ms bigint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'snowflake_backend_status'
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_backend_status() IS
    'Per-backend counters of the processes that have issued snowflake IDs (needs SELECT on snowflake_backend_status)';

CREATE VIEW snowflake_backend_status AS SELECT * FROM snowflake_backend_status();

COMMENT ON VIEW snowflake_backend_status IS
    'One row per live backend that has issued snowflake IDs';

REVOKE ALL ON snowflake_status, snowflake_backend_status FROM PUBLIC;
GRANT SELECT ON snowflake_status, snowflake_backend_status TO pg_monitor;
