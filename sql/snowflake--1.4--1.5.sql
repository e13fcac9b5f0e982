-- snowflake 1.5.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.5'" to load this file. \quit

-- The layout in snowflake_status and snowflake_node_identity (issue 31) -------
-- snowflake_status gains a last column, layout: the canonical text of the
-- server's layout (fields in order with their widths, unit and epoch), as
-- snowflake.layout and the layout arguments take it. A function's columns
-- cannot change in place: the view and its function are made again, with the
-- privileges the extension grants (as pg_stat_statements' updates do); a
-- privilege granted on the view by hand must be granted again.
-- snowflake_node_identity().layout shows the same text, so that nodes whose
-- fields lie in another order or count in another unit differ there too.

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
        OUT layout text)
    RETURNS record
    AS 'MODULE_PATHNAME', 'snowflake_status'
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_status() IS
    'The node''s generator: identity, layout, position, counters and durable bound (needs SELECT on snowflake_status)';

CREATE VIEW snowflake_status AS SELECT * FROM snowflake_status();

COMMENT ON VIEW snowflake_status IS
    'One row: this node''s snowflake generator';

REVOKE ALL ON snowflake_status FROM PUBLIC;
GRANT SELECT ON snowflake_status TO pg_monitor;

CREATE OR REPLACE FUNCTION snowflake_node_identity(
        OUT datacenter_id integer,
        OUT worker_id integer,
        OUT source text,
        OUT layout text,
        OUT system_identifier numeric,
        OUT problem text)
    RETURNS record
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    extension_schema name;
    node record;
    registry record;
BEGIN
    SELECT extnamespace::regnamespace::name INTO extension_schema
      FROM pg_extension WHERE extname = 'snowflake';
    EXECUTE format('SELECT * FROM %I.snowflake_registry_status()', extension_schema) INTO registry;
    system_identifier := registry.system_identifier;
    IF registry.state = 'not preloaded' THEN
        -- CREATE EXTENSION reaches every Citus node; the preload does not.
        problem := 'snowflake is not in shared_preload_libraries: it issues no IDs';
        RETURN;
    END IF;
    EXECUTE format('SELECT * FROM %I.snowflake_status()', extension_schema) INTO node;
    layout := node.layout;
    IF pg_is_in_recovery() THEN
        -- A standby shares its primary's identity and issues nothing.
        source := 'standby';
        datacenter_id := coalesce(registry.datacenter_id, node.datacenter_id);
        worker_id := coalesce(registry.worker_id, node.worker_id);
    ELSIF registry.in_use THEN
        source := 'registry';
        datacenter_id := registry.datacenter_id;
        worker_id := registry.worker_id;
        IF registry.state = 'conflict' THEN
            problem := format('the registry shows identity %s/%s held by another node, %s',
                              registry.datacenter_id, registry.worker_id, registry.conflict_host);
        ELSIF registry.state <> 'held' THEN
            problem := format('the registry has not confirmed its identity (state %s%s)',
                              registry.state, ': ' || registry.last_error);
        END IF;
    ELSE
        source := 'configured';
        datacenter_id := node.datacenter_id;
        worker_id := node.worker_id;
        IF node.worker_id IS NULL AND node.datacenter_id IS NULL THEN
            problem := 'snowflake.datacenter_id and snowflake.worker_id are not set';
        ELSIF node.worker_id IS NULL THEN
            problem := 'snowflake.worker_id is not set';
        ELSIF node.datacenter_id IS NULL THEN
            problem := 'snowflake.datacenter_id is not set';
        END IF;
    END IF;
END
$function$;

-- Every creation of the extension ends with this script, whatever started it
-- (CREATE EXTENSION, with CASCADE, in a function or a DO block, pg_restore):
-- the library notes it, so that the node later knows this data directory
-- issued no ID before (README, "Upgrading PostgreSQL"). An ALTER EXTENSION
-- UPDATE runs it too, and the function tells the two apart. No function is
-- left behind.
CREATE FUNCTION snowflake_note_created() RETURNS void
    AS 'MODULE_PATHNAME', 'snowflake_note_created'
    LANGUAGE C VOLATILE STRICT;
SELECT snowflake_note_created();
DROP FUNCTION snowflake_note_created();
