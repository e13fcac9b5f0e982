-- snowflake 1.8, whole: what CREATE EXTENSION snowflake runs. Each group
-- below is one use of the extension, in the order of the README's
-- Reference. The update scripts beside it (snowflake--1.7--1.8.sql and
-- the others) bring an older installation to the same objects;
-- sql/upgrade.sql checks that every way gives the same catalog.
--
-- The extension is relocatable: the objects go into the schema CREATE
-- EXTENSION chooses, and functions that call others of the extension look
-- its schema up in pg_extension when they run (there is no @extschema@).
\echo Use "CREATE EXTENSION snowflake" to load this file. \quit

-- Issuing IDs -----------------------------------------------------------------

CREATE FUNCTION snowflake_nextval() RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_nextval'
    LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_nextval() IS
    'Next ID of this node: unique, strictly increasing, time-ordered; never reissued';

CREATE FUNCTION snowflake_generate(n integer) RETURNS SETOF bigint
    AS 'MODULE_PATHNAME', 'snowflake_generate'
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE ROWS 1000;

COMMENT ON FUNCTION snowflake_generate(integer) IS
    'n new IDs of this node (1 to 10,000,000), strictly increasing, reserved a millisecond at a time';

CREATE FUNCTION snowflake_lastval() RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_lastval'
    LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowflake_lastval() IS
    'The snowflake ID most recently returned to this session, like lastval()';

-- IDs as values ---------------------------------------------------------------
-- IMMUTABLE: they depend on the layout alone, the server's (fixed for the life
-- of a cluster) or the one given. The layout argument is a preset such as
-- 'discord' or a specification such as
-- 'time:39 sequence:8 worker:16 unit:10ms epoch:1409529600000'
-- (doc/layouts.md); one C function serves each name, with or without it.

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

CREATE FUNCTION snowflake_timestamp(id bigint) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'snowflake_timestamp'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_timestamp(bigint) IS
    'The time a snowflake ID was issued (its millisecond)';

CREATE FUNCTION snowflake_timestamp(id bigint, layout text) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'snowflake_timestamp'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_timestamp(bigint, text) IS
    'The time of an ID of the given layout (the start of its unit of time)';

CREATE FUNCTION snowflake_compose(
        ts timestamptz, datacenter_id integer, worker_id integer, sequence integer)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_compose'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_compose(timestamptz, integer, integer, integer) IS
    'The snowflake ID with these parts: the inverse of snowflake_decode';

CREATE FUNCTION snowflake_compose(
        ts timestamptz, datacenter_id integer, worker_id integer, sequence integer, layout text)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_compose'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_compose(timestamptz, integer, integer, integer, text) IS
    'The ID of the given layout with these parts: the inverse of snowflake_decode(id, layout)';

-- Time ranges on the primary key: WHERE id BETWEEN snowflake_min_id(a) AND
-- snowflake_max_id(b).
CREATE FUNCTION snowflake_min_id(ts timestamptz) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_min_id'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_min_id(timestamptz) IS
    'The smallest ID any node can issue in the millisecond of ts: WHERE id >= snowflake_min_id(a)';

CREATE FUNCTION snowflake_min_id(ts timestamptz, layout text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_min_id'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_min_id(timestamptz, text) IS
    'The smallest ID of the given layout any node can issue in the unit of time of ts';

CREATE FUNCTION snowflake_max_id(ts timestamptz) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_max_id'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_max_id(timestamptz) IS
    'The largest ID any node can issue in the millisecond of ts: WHERE id <= snowflake_max_id(b)';

CREATE FUNCTION snowflake_max_id(ts timestamptz, layout text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_max_id'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_max_id(timestamptz, text) IS
    'The largest ID of the given layout any node can issue in the unit of time of ts';

-- Time partitions keyed by the ID (doc/clients.md, "Time partitions"): how
-- many IDs an interval spans in this node's layout. In the default layout
-- one millisecond is 2^22 IDs, so one day is 86400000 << 22. The interval
-- counts as extract(epoch) counts it (a month 30 days, a year 365.25).
CREATE FUNCTION snowflake_id_span(span interval) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_id_span'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_id_span(interval) IS
    'The number of IDs an interval spans in this node''s layout (one day: 86400000 << 22 by default), for partitions by ID one interval wide; the interval counts as extract(epoch) counts it';

-- Base32: 13 Crockford digits that sort like the number.
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

-- Public IDs (doc/public-ids.md): an ID shown outside without telling when,
-- where and how many. FF1 (NIST SP 800-38G) of its 63 bits under a key of
-- snowflake.public_id_keys_file, written as the key's version and 13
-- Crockford base32 digits. STABLE, not IMMUTABLE: the keys change at reload.
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

-- Converting a table ----------------------------------------------------------
-- A bigserial or identity column becomes DEFAULT snowflake_nextval(), its rows
-- kept. The table's lock is taken first, by name, before anything is read, so
-- no row can be written between reading the largest key and changing the
-- default; a sequence another column's default also uses is refused.

CREATE FUNCTION snowflake_convert_column(rel regclass, col name) RETURNS void
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

COMMENT ON FUNCTION snowflake_convert_column(regclass, name) IS
    'Turns a bigserial or identity column into DEFAULT snowflake_nextval(), keeping its rows';

-- The bound above a node's earlier IDs ----------------------------------------
-- Given by an operator when the node cannot know it: its data directory was
-- made by pg_upgrade, or restored or copied without pg_snowflake/ (README,
-- "Upgrading PostgreSQL"). Each only raises the bound. Not for PUBLIC: the
-- first reads a file of the server's, and a bound is never lowered and goes
-- to every standby, so snowflake_set_bound refuses one further ahead of the
-- clock than snowflake.max_lead plus a minute unless allow_far_future is
-- true.
CREATE FUNCTION snowflake_restore_bound(data_directory text) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'snowflake_restore_bound'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_restore_bound(text) IS
    'Adopts the durable bound in DATA_DIRECTORY/pg_snowflake/state, the data directory this one was upgraded or copied from; returns the time after which IDs are issued';

CREATE FUNCTION snowflake_set_bound(issued_up_to timestamptz, allow_far_future boolean DEFAULT false)
    RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'snowflake_set_bound'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_set_bound(timestamptz, boolean) IS
    'Declares that every ID this node issued before is of ISSUED_UP_TO or earlier; returns the time after which IDs are issued. A time further ahead of the clock than snowflake.max_lead plus a minute needs ALLOW_FAR_FUTURE';

REVOKE EXECUTE ON FUNCTION snowflake_restore_bound(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION snowflake_set_bound(timestamptz, boolean) FROM PUBLIC;

-- Layouts and identities ------------------------------------------------------

CREATE FUNCTION snowflake_layouts(
        OUT name text, OUT specification text, OUT bits integer, OUT system text)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'snowflake_layouts'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 10;

COMMENT ON FUNCTION snowflake_layouts() IS
    'The layout presets: name, specification, how many bits their IDs use, whose layout';

-- Identities across a cluster (doc/citus.md). Two nodes issuing under one
-- (datacenter_id, worker_id) is the one mistake that breaks uniqueness.
-- snowflake_node_identity() says under which identity this node issues IDs,
-- or why it issues none; snowflake_cluster_identities() asks every node of a
-- Citus cluster (run_command_on_all_nodes) and names the nodes that share an
-- identity, have none, use another layout or stand outside the registry the
-- others lease from. Without Citus it reports this node alone. Both read the
-- status views below (pg_monitor, or SELECT on snowflake_status and
-- snowflake_registry_status), on every node.

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

-- The dump carries the bound --------------------------------------------------
-- snowflake_dump_bound: one row, ids_before, above every ID this node issued
-- in this database, and system_identifier, the cluster whose bound covers it
-- (a restart after a clean shutdown lowers this cluster's own bound to the
-- exact one, and need not take its own row again; another cluster's row,
-- upgraded or restored without the trigger, is taken by the first ID issued
-- here). A configuration table of the extension, so pg_dump and pg_dumpall
-- dump its row with the database's data. The backends of this database raise
-- the row in place to the node's durable bound before they return IDs at or
-- past it (src/pg/bound/carrier.cpp states the protocol); an INSERT or a COPY
-- of a restore does not add a row: its trigger raises the node's bound to the
-- row's and merges the row into this one. UPDATE, DELETE and TRUNCATE are
-- refused: a new version of the row would lose the raises. PUBLIC may read it
-- (every role's pg_dump reads it) and insert (every role's restore writes it;
-- the trigger decides what a role may give the node). The first row is
-- inserted through the trigger, which raises it to the node's bound where it
-- is known (0 where it is not: it vouches for nothing).
CREATE TABLE snowflake_dump_bound (
    ids_before bigint NOT NULL,
    system_identifier bigint NOT NULL);

COMMENT ON TABLE snowflake_dump_bound IS
    'One row: every ID this node issued in this database is below ids_before; pg_dump carries it, and a restore raises the node''s bound to it';
COMMENT ON COLUMN snowflake_dump_bound.ids_before IS
    'An ID above every ID this node issued in this database (as a number, whatever the layout)';
COMMENT ON COLUMN snowflake_dump_bound.system_identifier IS
    'The system identifier (as pg_control_system() shows it) of the cluster whose bound covers ids_before';

CREATE FUNCTION snowflake_dump_bound_insert() RETURNS trigger
    AS 'MODULE_PATHNAME', 'snowflake_dump_bound_insert'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_dump_bound_insert() IS
    'Trigger of snowflake_dump_bound: a restored row raises this node''s bound and is merged into the table''s one row';

CREATE FUNCTION snowflake_dump_bound_refuse() RETURNS trigger
    AS 'MODULE_PATHNAME', 'snowflake_dump_bound_refuse'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_dump_bound_refuse() IS
    'Trigger of snowflake_dump_bound: refuses UPDATE, DELETE and TRUNCATE, which would lose the bound';

REVOKE EXECUTE ON FUNCTION snowflake_dump_bound_insert() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION snowflake_dump_bound_refuse() FROM PUBLIC;

CREATE TRIGGER snowflake_dump_bound_insert BEFORE INSERT ON snowflake_dump_bound
    FOR EACH ROW EXECUTE FUNCTION snowflake_dump_bound_insert();
CREATE TRIGGER snowflake_dump_bound_refuse BEFORE UPDATE OR DELETE ON snowflake_dump_bound
    FOR EACH ROW EXECUTE FUNCTION snowflake_dump_bound_refuse();
CREATE TRIGGER snowflake_dump_bound_refuse_truncate BEFORE TRUNCATE ON snowflake_dump_bound
    FOR EACH STATEMENT EXECUTE FUNCTION snowflake_dump_bound_refuse();

INSERT INTO snowflake_dump_bound VALUES (0, 0);

SELECT pg_catalog.pg_extension_config_dump('snowflake_dump_bound', '');

REVOKE ALL ON snowflake_dump_bound FROM PUBLIC;
GRANT SELECT, INSERT ON snowflake_dump_bound TO PUBLIC;

-- Status views ----------------------------------------------------------------
-- Each view reads its function. Reading a view is what a role is granted:
-- the views go to pg_monitor, and each function checks SELECT on its view
-- (granting the view is enough; calling the function directly needs the same
-- grant), so the functions' EXECUTE stays PUBLIC's. doc/monitoring.md turns
-- them into metrics.

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

-- The registry's lease (README, "Worker identities that cannot clash";
-- doc/registry.md).
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
        OUT registry_history_changed_at timestamptz,
        OUT registry_waits_for text,
        OUT registry_waiting_since timestamptz)
    RETURNS record
    AS 'MODULE_PATHNAME', 'snowflake_registry_status'
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_registry_status() IS
    'This node''s lease in the snowflake.registry database: state (disabled, starting, standby, unconfigured, held, expired, conflict, unreachable, exhausted, released), identity, lease times, the other node in a conflict, the last error, what the registry can lose (registry_durability: synchronous, no standby, asynchronous standbys, in recovery), what a stalled claim or renewal waits for there (registry_waits_for: synchronous standbys, or a wait event) (needs SELECT on snowflake_registry_status)';

CREATE VIEW snowflake_registry_status AS SELECT * FROM snowflake_registry_status();

COMMENT ON VIEW snowflake_registry_status IS
    'One row: this node''s lease in the snowflake.registry database';

REVOKE ALL ON snowflake_status FROM PUBLIC;
GRANT SELECT ON snowflake_status TO pg_monitor;
REVOKE ALL ON snowflake_backend_status FROM PUBLIC;
GRANT SELECT ON snowflake_backend_status TO pg_monitor;
REVOKE ALL ON snowflake_registry_status FROM PUBLIC;
GRANT SELECT ON snowflake_registry_status TO pg_monitor;

-- Routing by ID ---------------------------------------------------------------
-- PARTITION BY HASH (id snowflake_node_ops) sends each ID to the partition
-- whose remainder is the node that issued it (doc/sharding.md).

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

-- The creation, noted ---------------------------------------------------------
-- Every creation of the extension ends here, whatever started it (CREATE
-- EXTENSION, with CASCADE, in a function or a DO block, pg_restore). With
-- the preload the library has seen it already; without, this call notes it,
-- so that the node later knows this data directory issued no ID before
-- (src/pg/bound/bound_origin.cpp, "Creations"; README, "Upgrading
-- PostgreSQL"). No function is left behind. (An update from 1.4 or earlier
-- runs the same lines in snowflake--1.4--1.5.sql, where the function tells
-- an update from a creation.)
CREATE FUNCTION snowflake_note_created() RETURNS void
    AS 'MODULE_PATHNAME', 'snowflake_note_created'
    LANGUAGE C VOLATILE STRICT;
SELECT snowflake_note_created();
DROP FUNCTION snowflake_note_created();
