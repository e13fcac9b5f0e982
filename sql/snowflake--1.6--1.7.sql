-- snowflake 1.7.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.7'" to load this file. \quit

-- snowflake_set_bound refuses a far-future bound (issue 41) ------------------
-- A bound is never lowered and goes to every standby, so a mistyped year
-- stopped the node until that year. The library now refuses a bound further
-- ahead of the clock than snowflake.max_lead plus a minute unless
-- allow_far_future is true. DEFAULT false: a call with the time alone works as
-- before. A new argument is a new signature, so the function is made again,
-- with its comment and without EXECUTE for PUBLIC, as 1.4 made it.
DROP FUNCTION snowflake_set_bound(timestamptz);

CREATE FUNCTION snowflake_set_bound(issued_up_to timestamptz, allow_far_future boolean DEFAULT false)
    RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'snowflake_set_bound'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_set_bound(timestamptz, boolean) IS
    'Declares that every ID this node issued before is of ISSUED_UP_TO or earlier; returns the time after which IDs are issued. A time further ahead of the clock than snowflake.max_lead plus a minute needs ALLOW_FAR_FUTURE';

REVOKE EXECUTE ON FUNCTION snowflake_set_bound(timestamptz, boolean) FROM PUBLIC;

-- Public IDs (issue 40) ------------------------------------------------------
-- An ID shown outside without telling when, where and how many: FF1 (NIST SP
-- 800-38G) of its 63 bits under a key of snowflake.public_id_keys_file,
-- written as the key's version and 13 Crockford base32 digits. STABLE, not
-- IMMUTABLE: the keys change at reload.

CREATE FUNCTION snowflake_to_public(id bigint, tweak text DEFAULT '') RETURNS text
    AS 'MODULE_PATHNAME', 'snowflake_to_public'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_to_public(bigint, text) IS
    'The ID as 14 characters that hide it (FF1 under the current key of snowflake.public_id_keys_file, and the tweak): reversible with the key, not access control';

CREATE FUNCTION snowflake_from_public(public_id text, tweak text DEFAULT '') RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_from_public'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_from_public(text, text) IS
    'The ID whose snowflake_to_public text this is, under any key still in snowflake.public_id_keys_file and the same tweak; any well-formed text gives some ID';

-- When the layout's time runs out, in snowflake_status (issue 39, item 8) ----
-- Two last columns: layout_ends_at, the time of the last unit the layout
-- issues (snowflake_timestamp of its largest ID; infinity past the end of
-- timestamptz), and layout_remaining, the time from now until then (0 once
-- there; NULL where layout_ends_at is infinity). The server log warns at start
-- and once a day within a year of the end. As 1.6 did, the view and its
-- function are made again, with the privileges the extension grants; a
-- privilege granted on the view by hand must be granted again.
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
        OUT durable_wait_ms bigint,
        OUT layout_ends_at timestamptz,
        OUT layout_remaining interval)
    RETURNS record
    AS 'MODULE_PATHNAME', 'snowflake_status'
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_status() IS
    'The node''s generator: identity, layout and when it runs out, position, counters and durable bound (needs SELECT on snowflake_status)';

CREATE VIEW snowflake_status AS SELECT * FROM snowflake_status();

COMMENT ON VIEW snowflake_status IS
    'One row: this node''s snowflake generator';

REVOKE ALL ON snowflake_status FROM PUBLIC;
GRANT SELECT ON snowflake_status TO pg_monitor;

-- What the registry can lose (issue 37) --------------------------------------
-- snowflake_registry_status gains three last columns: registry_durability
-- (synchronous, no standby, asynchronous standbys or in recovery: what the
-- registry worker last found the registry can lose of the claims and
-- renewals it acknowledged; NULL when unknown), registry_standbys (the
-- standbys streaming from it) and registry_history_changed_at (when the
-- worker last found it on another system identifier or timeline: a failover
-- or a restore). A function's columns cannot change in place: the view and
-- its function are made again, with the privileges the extension grants (as
-- 1.3 made them); a privilege granted on the view by hand must be granted
-- again.
DROP VIEW snowflake_registry_status;
DROP FUNCTION snowflake_registry_status();

CREATE FUNCTION snowflake_registry_status(
        OUT in_use boolean,
        OUT state text,
        OUT automatic boolean,
        OUT datacenter_id integer,
        OUT worker_id integer,
        OUT system_identifier numeric,
        OUT claimed_at timestamptz,
        OUT renewed_at timestamptz,
        OUT expires_at timestamptz,
        OUT valid_until timestamptz,
        OUT conflict_host text,
        OUT conflict_data_directory text,
        OUT conflict_system_identifier numeric,
        OUT conflict_timeline bigint,
        OUT conflict_since timestamptz,
        OUT conflict_expires_at timestamptz,
        OUT last_error text,
        OUT last_error_at timestamptz,
        OUT registry_durability text,
        OUT registry_standbys integer,
        OUT registry_history_changed_at timestamptz)
    RETURNS record
    AS 'MODULE_PATHNAME', 'snowflake_registry_status'
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_registry_status() IS
    'This node''s lease in the snowflake.registry database: state (disabled, starting, standby, unconfigured, held, expired, conflict, unreachable, exhausted, released), identity, lease times, the other node in a conflict, the last error, what the registry can lose (registry_durability: synchronous, no standby, asynchronous standbys, in recovery) (needs SELECT on snowflake_registry_status)';

CREATE VIEW snowflake_registry_status AS SELECT * FROM snowflake_registry_status();

COMMENT ON VIEW snowflake_registry_status IS
    'One row: this node''s lease in the snowflake.registry database';

REVOKE ALL ON snowflake_registry_status FROM PUBLIC;
GRANT SELECT ON snowflake_registry_status TO pg_monitor;
