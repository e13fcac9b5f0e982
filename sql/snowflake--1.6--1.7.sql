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
