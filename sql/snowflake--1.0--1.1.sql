-- snowflake 1.1: the SQL toolkit around the ID, and routing by ID.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.1'" to load this file. \quit

-- IDs as values --------------------------------------------------------------

CREATE FUNCTION snowflake_timestamp(id bigint) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'snowflake_timestamp'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_timestamp(bigint) IS
    'The time a snowflake ID was issued (its millisecond)';

CREATE FUNCTION snowflake_compose(
        ts timestamptz, datacenter_id integer, worker_id integer, sequence integer)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_compose'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_compose(timestamptz, integer, integer, integer) IS
    'The snowflake ID with these parts: the inverse of snowflake_decode';

CREATE FUNCTION snowflake_min_id(ts timestamptz) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_min_id'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_min_id(timestamptz) IS
    'The smallest ID any node can issue in the millisecond of ts: WHERE id >= snowflake_min_id(a)';

CREATE FUNCTION snowflake_max_id(ts timestamptz) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_max_id'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_max_id(timestamptz) IS
    'The largest ID any node can issue in the millisecond of ts: WHERE id <= snowflake_max_id(b)';

CREATE FUNCTION snowflake_to_base32(id bigint) RETURNS text
    AS 'MODULE_PATHNAME', 'snowflake_to_base32'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_to_base32(bigint) IS
    'The ID as 13 Crockford base32 digits: sorts like the number, safe for JavaScript and URLs';

CREATE FUNCTION snowflake_from_base32(text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_from_base32'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_from_base32(text) IS
    'The ID written by snowflake_to_base32 (case-insensitive; I and L read as 1, O as 0)';

-- Issuing --------------------------------------------------------------------

CREATE FUNCTION snowflake_lastval() RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_lastval'
    LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowflake_lastval() IS
    'The snowflake ID most recently returned to this session, like lastval()';

CREATE FUNCTION snowflake_generate(n integer) RETURNS SETOF bigint
    AS 'MODULE_PATHNAME', 'snowflake_generate'
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE ROWS 1000;

COMMENT ON FUNCTION snowflake_generate(integer) IS
    'n new IDs of this node (1 to 10,000,000), strictly increasing, reserved a millisecond at a time';

-- Converting a table ---------------------------------------------------------

CREATE FUNCTION snowflake_convert_column(rel regclass, col name) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    extension_schema name;
    column_type regtype;
    is_identity boolean;
    default_expression text;
    sequence_name text;
    largest bigint;
    first_new_id bigint;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = rel) NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '% is not a table', rel
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'snowflake_convert_column converts a column of a table.';
    END IF;

    SELECT a.atttypid, a.attidentity <> '', pg_get_expr(d.adbin, d.adrelid)
      INTO column_type, is_identity, default_expression
      FROM pg_attribute a
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE a.attrelid = rel AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', col, rel
            USING ERRCODE = 'undefined_column',
                  HINT = 'Name an existing bigserial or identity column.';
    END IF;

    IF column_type <> 'bigint'::regtype THEN
        RAISE EXCEPTION 'column "%" of relation % is not bigint', col, rel
            USING ERRCODE = 'datatype_mismatch',
                  DETAIL = format('Its type is %s; snowflake IDs need bigint.', column_type),
                  HINT = format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint first.', rel, col);
    END IF;

    SELECT extnamespace::regnamespace::name INTO extension_schema
      FROM pg_extension WHERE extname = 'snowflake';
    IF default_expression ~ 'snowflake_nextval\(\)' THEN
        RAISE EXCEPTION 'column "%" of relation % already uses snowflake_nextval()', col, rel
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its default is %s.', default_expression),
                  HINT = 'There is nothing to convert.';
    END IF;

    sequence_name := pg_get_serial_sequence(rel::text, col);
    IF NOT is_identity AND (sequence_name IS NULL
            OR default_expression IS DISTINCT FROM
               format('nextval(%L::regclass)', sequence_name::regclass)) THEN
        RAISE EXCEPTION 'column "%" of relation % is not a serial or identity column', col, rel
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its default is %s.', coalesce(default_expression, 'none')),
                  HINT = format('For any other column, ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %I.snowflake_nextval().',
                                rel, col, extension_schema);
    END IF;

    -- The rows keep their keys, so every new ID must be above them.
    EXECUTE format('SELECT max(%I) FROM %s', col, rel) INTO largest;
    EXECUTE format('SELECT %I.snowflake_min_id(clock_timestamp())', extension_schema)
        INTO first_new_id;
    IF largest >= first_new_id THEN
        RAISE EXCEPTION 'column "%" of relation % holds values that new snowflake IDs could repeat', col, rel
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its largest value is %s; new IDs start at %s.', largest, first_new_id),
                  HINT = 'Renumber those rows first, or keep the column as it is.';
    END IF;

    IF is_identity THEN
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', rel, col);
    END IF;
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %I.snowflake_nextval()',
                   rel, col, extension_schema);
    IF NOT is_identity THEN
        EXECUTE format('DROP SEQUENCE %s', sequence_name);
    END IF;
END
$function$;

COMMENT ON FUNCTION snowflake_convert_column(regclass, name) IS
    'Turns a bigserial or identity column into DEFAULT snowflake_nextval(), keeping its rows';

-- Status ---------------------------------------------------------------------

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
        OUT durable_until timestamptz)
    RETURNS record
    AS 'MODULE_PATHNAME', 'snowflake_status'
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_status() IS
    'The node''s generator: identity, layout, position, counters and durable bound (needs SELECT on snowflake_status)';

CREATE VIEW snowflake_status AS SELECT * FROM snowflake_status();

COMMENT ON VIEW snowflake_status IS
    'One row: this node''s snowflake generator';

CREATE FUNCTION snowflake_backend_status(
        OUT pid integer,
        OUT ids_issued bigint,
        OUT sequence_waits bigint,
        OUT clock_waits bigint,
        OUT clock_errors bigint,
        OUT clock_steps bigint,
        OUT largest_clock_step_ms bigint)
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

-- Registry (issue 4) ---------------------------------------------------------

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
        OUT last_error_at timestamptz)
    RETURNS record
    AS 'MODULE_PATHNAME', 'snowflake_registry_status'
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_registry_status() IS
    'This node''s lease in the snowflake.registry database: state (disabled, starting, standby, unconfigured, held, expired, conflict, unreachable, exhausted), identity, lease times, the other node in a conflict, the last error';

REVOKE ALL ON FUNCTION snowflake_registry_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snowflake_registry_status() TO pg_monitor;
