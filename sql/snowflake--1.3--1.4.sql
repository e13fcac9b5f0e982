-- snowflake 1.4.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.4'" to load this file. \quit

-- The bound above a node's earlier IDs, given by an operator when the node
-- cannot know it: its data directory was made by pg_upgrade, or restored or
-- copied without pg_snowflake/ (README, "Upgrading PostgreSQL"). Each only
-- raises the bound. Not for PUBLIC: the first reads a file of the server's.
CREATE FUNCTION snowflake_restore_bound(data_directory text) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'snowflake_restore_bound'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_restore_bound(text) IS
    'Adopts the durable bound in DATA_DIRECTORY/pg_snowflake/state, the data directory this one was upgraded or copied from; returns the time after which IDs are issued';

CREATE FUNCTION snowflake_set_bound(issued_up_to timestamptz) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'snowflake_set_bound'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_set_bound(timestamptz) IS
    'Declares that every ID this node issued before is of ISSUED_UP_TO or earlier; returns the time after which IDs are issued';

REVOKE EXECUTE ON FUNCTION snowflake_restore_bound(text), snowflake_set_bound(timestamptz) FROM PUBLIC;

-- snowflake_convert_column, as 1.2 had it, with four findings mended: a
-- nonexistent relation OID is an error of its own (it used to reach LOCK
-- TABLE as a bare number, a syntax error); the table is locked by its name
-- before its kind is trusted, and checked again under the lock; "already uses
-- snowflake_nextval()" means the default depends on this extension's
-- function (a default of my_snowflake_nextval() matched the old pattern);
-- and a sequence that another column's default also uses is refused with the
-- other column named, instead of DROP SEQUENCE's dependency error after the
-- work was done.
CREATE OR REPLACE FUNCTION snowflake_convert_column(rel regclass, col name) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    extension_schema name;
    qualified text;
    kind "char";
    column_type regtype;
    is_identity boolean;
    default_oid oid;
    default_expression text;
    sequence_name text;
    other_user text;
    largest bigint;
    first_new_id bigint;
BEGIN
    SELECT format('%I.%I', n.nspname, c.relname), c.relkind INTO qualified, kind
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid = rel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation with OID % does not exist', rel::oid
            USING ERRCODE = 'undefined_table',
                  HINT = 'Name the table, as in snowflake_convert_column(''orders'', ''id'').';
    END IF;
    IF kind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '% is not a table', qualified
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'snowflake_convert_column converts a column of a table.';
    END IF;

    -- The lock ALTER TABLE takes, taken first: no row can be written between
    -- reading the largest value and changing the default (and no lock upgrade
    -- can deadlock with another conversion). By name: if the table went away
    -- meanwhile, this fails saying so; and the name must still be this table.
    EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', qualified);
    IF qualified::regclass <> rel THEN
        RAISE EXCEPTION 'relation % changed while snowflake_convert_column waited for its lock', qualified
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run it again.';
    END IF;

    SELECT a.atttypid, a.attidentity <> '', d.oid, pg_get_expr(d.adbin, d.adrelid)
      INTO column_type, is_identity, default_oid, default_expression
      FROM pg_attribute a
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE a.attrelid = rel AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', col, qualified
            USING ERRCODE = 'undefined_column',
                  HINT = 'Name an existing bigserial or identity column.';
    END IF;

    IF column_type <> 'bigint'::regtype THEN
        RAISE EXCEPTION 'column "%" of relation % is not bigint', col, qualified
            USING ERRCODE = 'datatype_mismatch',
                  DETAIL = format('Its type is %s; snowflake IDs need bigint.', column_type),
                  HINT = format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint first.', qualified, col);
    END IF;

    SELECT extnamespace::regnamespace::name INTO extension_schema
      FROM pg_extension WHERE extname = 'snowflake';
    IF EXISTS (SELECT 1 FROM pg_depend
                WHERE classid = 'pg_attrdef'::regclass AND objid = default_oid
                  AND refclassid = 'pg_proc'::regclass
                  AND refobjid = format('%I.snowflake_nextval()', extension_schema)::regprocedure) THEN
        RAISE EXCEPTION 'column "%" of relation % already uses snowflake_nextval()', col, qualified
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its default is %s.', default_expression),
                  HINT = 'There is nothing to convert.';
    END IF;

    sequence_name := pg_get_serial_sequence(qualified, col);
    IF NOT is_identity AND (sequence_name IS NULL
            OR default_expression IS DISTINCT FROM
               format('nextval(%L::regclass)', sequence_name::regclass)) THEN
        RAISE EXCEPTION 'column "%" of relation % is not a serial or identity column', col, qualified
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its default is %s.', coalesce(default_expression, 'none')),
                  HINT = format('For any other column, ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %I.snowflake_nextval().',
                                qualified, col, extension_schema);
    END IF;

    -- The sequence goes away with the conversion: no other default may use it.
    IF NOT is_identity THEN
        SELECT format('column %I of %s', a.attname, d.adrelid::regclass) INTO other_user
          FROM pg_depend p
          JOIN pg_attrdef d ON p.classid = 'pg_attrdef'::regclass AND d.oid = p.objid
          JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
         WHERE p.refclassid = 'pg_class'::regclass AND p.refobjid = sequence_name::regclass
           AND d.oid <> default_oid
         ORDER BY 1 LIMIT 1;
        IF other_user IS NOT NULL THEN
            RAISE EXCEPTION 'the sequence of column "%" of relation % is also used by %', col, qualified, other_user
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('snowflake_convert_column drops %s, which the default of %s uses too.',
                                      sequence_name, other_user),
                      HINT = 'Give the other column a sequence or default of its own first, or convert it too.';
        END IF;
    END IF;

    -- The rows keep their keys, so every new ID must be above them.
    EXECUTE format('SELECT max(%I) FROM %s', col, qualified) INTO largest;
    EXECUTE format('SELECT %I.snowflake_min_id(clock_timestamp())', extension_schema)
        INTO first_new_id;
    IF largest >= first_new_id THEN
        RAISE EXCEPTION 'column "%" of relation % holds values that new snowflake IDs could repeat', col, qualified
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its largest value is %s; new IDs start at %s.', largest, first_new_id),
                  HINT = 'Renumber those rows first, or keep the column as it is.';
    END IF;

    IF is_identity THEN
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', qualified, col);
    END IF;
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %I.snowflake_nextval()',
                   qualified, col, extension_schema);
    IF NOT is_identity THEN
        EXECUTE format('DROP SEQUENCE %s', sequence_name);
    END IF;
END
$function$;

-- Identities across a cluster (issue 21, doc/citus.md) ------------------------
-- Two nodes issuing under one (datacenter_id, worker_id) is the one mistake
-- that breaks uniqueness. snowflake_node_identity() says under which identity
-- this node issues IDs, or why it issues none; snowflake_cluster_identities()
-- asks every node of a Citus cluster (run_command_on_all_nodes) and names
-- the nodes that share an identity, have none, use another layout or stand
-- outside the registry the others lease from. Without Citus it reports this
-- node alone. Both read the status views (pg_monitor, or SELECT on
-- snowflake_status and snowflake_registry_status), on every node.

CREATE FUNCTION snowflake_node_identity(
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
    layout := format('%s/%s/%s/%s bits, epoch %s ms', node.timestamp_bits, node.datacenter_bits,
                     node.worker_bits, node.sequence_bits,
                     (extract(epoch FROM node.epoch) * 1000)::bigint);
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

COMMENT ON FUNCTION snowflake_node_identity() IS
    'The identity under which this node issues IDs (configured, or leased from the registry), its layout, and why it issues none if so (needs SELECT on snowflake_status and snowflake_registry_status)';

CREATE FUNCTION snowflake_cluster_identities(
        OUT node text,
        OUT datacenter_id integer,
        OUT worker_id integer,
        OUT source text,
        OUT layout text,
        OUT system_identifier numeric,
        OUT problem text)
    RETURNS SETOF record
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    extension_schema name;
    probe text;
    answers text;
BEGIN
    SELECT extnamespace::regnamespace::name INTO extension_schema
      FROM pg_extension WHERE extname = 'snowflake';
    probe := format('SELECT row_to_json(i) FROM %I.snowflake_node_identity() i', extension_schema);
    IF to_regproc('pg_catalog.run_command_on_all_nodes') IS NULL THEN
        answers := format('SELECT %L AS node, true AS success, (%s)::text AS result', 'local', probe);
    ELSE
        -- Citus: every active primary node. The coordinator's nodeid is 0
        -- when it is not in pg_dist_node.
        answers := format($citus$
            SELECT coalesce(n.nodename || ':' || n.nodeport,
                            current_setting('citus.local_hostname') || ':' || current_setting('port')) AS node,
                   r.success, r.result
              FROM pg_catalog.run_command_on_all_nodes(%L) r
              LEFT JOIN pg_catalog.pg_dist_node n ON n.nodeid = r.nodeid
        $citus$, probe);
    END IF;
    RETURN QUERY EXECUTE format($query$
        WITH answers AS (%s),
        here AS (SELECT layout FROM %I.snowflake_node_identity()),
        nodes AS (
            SELECT node, (j->>'datacenter_id')::integer AS datacenter_id,
                   (j->>'worker_id')::integer AS worker_id, j->>'source' AS source,
                   j->>'layout' AS layout, (j->>'system_identifier')::numeric AS system_identifier,
                   coalesce(failure, j->>'problem') AS own_problem
              FROM (SELECT a.node,
                           CASE WHEN a.success THEN a.result::json END AS j,
                           CASE WHEN NOT a.success
                                THEN 'could not ask it: ' || regexp_replace(a.result, '\s*\n\s*', ' ', 'g') END AS failure
                      FROM answers a) parsed),
        issuing AS (SELECT * FROM nodes WHERE own_problem IS NULL AND source <> 'standby')
        SELECT n.node, n.datacenter_id, n.worker_id, n.source, n.layout, n.system_identifier,
               nullif(concat_ws('; ',
                   n.own_problem,
                   (SELECT 'issues IDs under the same identity as ' || string_agg(o.node, ', ' ORDER BY o.node)
                           || CASE WHEN bool_or(o.system_identifier = n.system_identifier)
                                   THEN ' (the same system identifier: a copy of its data directory)' ELSE '' END
                      FROM issuing o
                     WHERE n.own_problem IS NULL AND n.source <> 'standby' AND o.node <> n.node
                       AND o.datacenter_id = n.datacenter_id AND o.worker_id = n.worker_id),
                   CASE WHEN n.layout <> (SELECT layout FROM here)
                        THEN format('layout %%s differs from this node''s, %%s', n.layout, (SELECT layout FROM here)) END,
                   CASE WHEN n.source = 'configured' AND EXISTS (SELECT FROM nodes o WHERE o.source = 'registry')
                        THEN 'uses no registry, while other nodes lease their identities from one: nothing keeps a lease from taking its identity' END),
                 '')
          FROM nodes n ORDER BY n.node
        $query$, answers, extension_schema);
END
$function$;

COMMENT ON FUNCTION snowflake_cluster_identities() IS
    'The identity of every node of the Citus cluster (this node alone without Citus), with a problem for nodes that share one, have none, use another layout or stand outside the registry';

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

-- Time partitions keyed by the ID (doc/clients.md, "Time partitions").
-- How many IDs an interval spans in this node's layout: in the default layout
-- one millisecond is 2^22 IDs, so one day is 86400000 << 22. The interval
-- counts as extract(epoch) counts it (a month 30 days, a year 365.25).
CREATE FUNCTION snowflake_id_span(span interval) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_id_span'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_id_span(interval) IS
    'The number of IDs an interval spans in this node''s layout (one day: 86400000 << 22 by default), for partitions by ID one interval wide; the interval counts as extract(epoch) counts it';
