-- snowflake 1.4.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.4'" to load this file. \quit

-- Layouts (issue 19) ----------------------------------------------------------
-- Other systems' IDs read and made in SQL: the ID functions take a layout per
-- call (a preset such as 'discord' or a specification such as
-- 'time:39 sequence:8 worker:16 unit:10ms epoch:1409529600000'), and
-- snowflake_layouts() lists the presets. One C function serves each name,
-- with or without the layout argument.

CREATE FUNCTION snowflake_decode(
        id bigint,
        layout text,
        OUT ts timestamptz,
        OUT datacenter_id integer,
        OUT worker_id integer,
        OUT sequence integer)
    RETURNS record
    AS 'MODULE_PATHNAME', 'snowflake_decode'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_decode(bigint, text) IS
    'The parts of an ID of the given layout (a preset such as ''discord'', or a specification)';

CREATE FUNCTION snowflake_timestamp(id bigint, layout text) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'snowflake_timestamp'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_timestamp(bigint, text) IS
    'The time of an ID of the given layout (the start of its unit of time)';

CREATE FUNCTION snowflake_compose(
        ts timestamptz, datacenter_id integer, worker_id integer, sequence integer, layout text)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_compose'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_compose(timestamptz, integer, integer, integer, text) IS
    'The ID of the given layout with these parts: the inverse of snowflake_decode(id, layout)';

CREATE FUNCTION snowflake_min_id(ts timestamptz, layout text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_min_id'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_min_id(timestamptz, text) IS
    'The smallest ID of the given layout any node can issue in the unit of time of ts';

CREATE FUNCTION snowflake_max_id(ts timestamptz, layout text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_max_id'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_max_id(timestamptz, text) IS
    'The largest ID of the given layout any node can issue in the unit of time of ts';

CREATE FUNCTION snowflake_layouts(
        OUT name text, OUT specification text, OUT bits integer, OUT system text)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'snowflake_layouts'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 10;

COMMENT ON FUNCTION snowflake_layouts() IS
    'The layout presets: name, specification, how many bits their IDs use, whose layout';

-- End of the layouts. ----------------------------------------------------------
