-- Updates. What each update brings and how the library serves an older
-- version before it: version 1.0 installs, and ALTER EXTENSION UPDATE brings
-- it to 1.1, then to 1.2, then to the default version; 1.1 installed as such
-- updates to 1.2 too, 1.2 to 1.3, 1.3 to 1.4, 1.4 to 1.5, 1.5 to 1.6, 1.6 to
-- 1.7 and 1.7 to 1.8. Then, at the end, the catalog: a fresh CREATE EXTENSION
-- (the whole script of the default version) and every way of updating to it
-- give the same objects, each described by its definition.
-- Quietly: an earlier test may have created it, or not (the order of tests).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS snowflake CASCADE;
RESET client_min_messages;
CREATE EXTENSION snowflake VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT p.oid::regprocedure AS function, provolatile, proisstrict, proparallel
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
 ORDER BY p.oid::regprocedure::text;
CREATE TABLE kept (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
INSERT INTO kept DEFAULT VALUES;

ALTER EXTENSION snowflake UPDATE TO '1.1';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT prosrc LIKE '%LOCK TABLE%' AS convert_locks_first
  FROM pg_proc WHERE proname = 'snowflake_convert_column';
ALTER EXTENSION snowflake UPDATE TO '1.2';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT prosrc LIKE '%LOCK TABLE%' AS convert_locks_first
  FROM pg_proc WHERE proname = 'snowflake_convert_column';
ALTER EXTENSION snowflake UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';

-- The table made under 1.0 keeps working.
INSERT INTO kept DEFAULT VALUES;
SELECT count(*), count(DISTINCT id) FROM kept;
DROP TABLE kept;

-- 1.1 to 1.2 directly.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.1';
ALTER EXTENSION snowflake UPDATE TO '1.2';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT prosrc LIKE '%LOCK TABLE%' AS convert_locks_first,
       obj_description(oid, 'pg_proc') IS NOT NULL AS commented
  FROM pg_proc WHERE proname = 'snowflake_convert_column';

-- 1.2 to 1.3 directly (and on): snowflake_registry_status gets its view,
-- granted to pg_monitor, and the function's EXECUTE goes back to PUBLIC (the
-- function checks SELECT on the view).
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.2';
SELECT to_regclass('snowflake_registry_status') IS NULL AS no_view,
       has_function_privilege('public', 'snowflake_registry_status()', 'EXECUTE') AS public_executes,
       has_function_privilege('pg_monitor', 'snowflake_registry_status()', 'EXECUTE') AS monitor_executes;
-- Under 1.2's script the function's EXECUTE grant is still what guards it.
SELECT in_use, state FROM snowflake_registry_status();
ALTER EXTENSION snowflake UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT in_use, state FROM snowflake_registry_status;

-- 1.3 to 1.4 directly.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.3';
ALTER EXTENSION snowflake UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
-- Identities across a cluster (issue 21).
SELECT node, datacenter_id, worker_id, source, problem FROM snowflake_cluster_identities();
-- Layouts (issue 19): the ID functions take a layout, and the presets are listed.
SELECT * FROM snowflake_decode(175928847299117063, 'discord');
SELECT snowflake_compose('2016-04-30 11:18:25.796+00', 1, 0, 7, 'discord') AS discord_example;
SELECT count(*) AS presets FROM snowflake_layouts();
-- snowflake_id_span (time partitions keyed by the ID): one day of IDs.
SELECT to_regprocedure('snowflake_id_span(interval)') IS NOT NULL AS has_id_span,
       snowflake_id_span('1 day') = 86400000::bigint << 22 AS one_day;

-- 1.4 to 1.5 directly: snowflake_status gains its last column, layout (the
-- view and its function are made again, read by pg_monitor, not by PUBLIC),
-- and snowflake_node_identity() shows the same text. Before the update the
-- library serves 1.4's sixteen columns.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.4';
SELECT count(*) AS columns_under_1_4 FROM pg_attribute
 WHERE attrelid = 'snowflake_status'::regclass AND attnum > 0;
SELECT ids_issued >= 0 AS reads_under_1_4 FROM snowflake_status;
SELECT layout FROM snowflake_node_identity();
ALTER EXTENSION snowflake UPDATE TO '1.5';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT attname FROM pg_attribute
 WHERE attrelid = 'snowflake_status'::regclass AND attnum > 15 ORDER BY attnum;
SELECT layout FROM snowflake_status;
SELECT layout FROM snowflake_node_identity();
SELECT has_table_privilege('pg_monitor', 'snowflake_status', 'SELECT') AS monitor_reads,
       has_table_privilege('public', 'snowflake_status', 'SELECT') AS public_reads,
       obj_description('snowflake_status'::regclass, 'pg_class') IS NOT NULL AS view_commented,
       obj_description('snowflake_status()'::regprocedure, 'pg_proc') IS NOT NULL AS function_commented;

-- 1.5 to 1.6 directly: snowflake_status and snowflake_backend_status gain
-- their last columns, durable_waits and durable_wait_ms (the views and their
-- functions are made again, read by pg_monitor, not by PUBLIC). Before the
-- update the library serves 1.5's columns.
SELECT count(*) AS status_columns_under_1_5 FROM pg_attribute
 WHERE attrelid = 'snowflake_status'::regclass AND attnum > 0;
SELECT count(*) AS backend_columns_under_1_5 FROM pg_attribute
 WHERE attrelid = 'snowflake_backend_status'::regclass AND attnum > 0;
SELECT snowflake_nextval() > 0 AS issued;
SELECT layout IS NOT NULL AS reads_under_1_5 FROM snowflake_status;
SELECT ids_issued >= 1 AS backend_reads_under_1_5
  FROM snowflake_backend_status WHERE pid = pg_backend_pid();
ALTER EXTENSION snowflake UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT attname FROM pg_attribute
 WHERE attrelid = 'snowflake_status'::regclass AND attnum > 16 ORDER BY attnum;
SELECT attname FROM pg_attribute
 WHERE attrelid = 'snowflake_backend_status'::regclass AND attnum > 6 ORDER BY attnum;
-- The server's first ID waited for its first bound.
SELECT durable_waits >= 1 AS counted, durable_wait_ms >= 0 AS timed FROM snowflake_status;
SELECT durable_waits >= 0 AS backend_counted FROM snowflake_backend_status
 WHERE pid = pg_backend_pid();

-- 1.6 to 1.7 directly: snowflake_set_bound gains allow_far_future (issue 41),
-- DEFAULT false, so a call with the time alone works as before; still not for
-- PUBLIC, still commented.
-- snowflake_status gains its last columns, layout_ends_at and layout_remaining
-- (issue 39, 8: the view and its function are made again, read by pg_monitor,
-- not by PUBLIC); before the update the library serves 1.6's 19 columns.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.6';
SELECT p.oid::regprocedure AS function, pg_get_function_arguments(p.oid) AS arguments
  FROM pg_proc p WHERE proname = 'snowflake_set_bound';
SELECT count(*) AS status_columns_under_1_6 FROM pg_attribute
 WHERE attrelid = 'snowflake_status'::regclass AND attnum > 0;
SELECT durable_waits >= 0 AS reads_under_1_6 FROM snowflake_status;
ALTER EXTENSION snowflake UPDATE TO '1.7';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'snowflake_status'::regclass AND attnum > 19 ORDER BY attnum;
SELECT layout_ends_at = snowflake_timestamp(9223372036854775807) AS ends_at_largest_id,
       layout_remaining > interval '50 years' AS far_from_the_end
  FROM snowflake_status;
SELECT has_table_privilege('pg_monitor', 'snowflake_status', 'SELECT') AS monitor_reads,
       has_table_privilege('public', 'snowflake_status', 'SELECT') AS public_reads,
       obj_description('snowflake_status'::regclass, 'pg_class') IS NOT NULL AS view_commented,
       obj_description('snowflake_status()'::regprocedure, 'pg_proc') IS NOT NULL AS function_commented;
SELECT p.oid::regprocedure AS function, pg_get_function_arguments(p.oid) AS arguments,
       has_function_privilege('public', p.oid, 'EXECUTE') AS public_executes,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
  FROM pg_proc p WHERE proname = 'snowflake_set_bound';
-- A time long past raises nothing, and takes one argument as before.
SELECT snowflake_set_bound('2011-01-01 00:00:00+00') > '2011-01-01 00:00:00+00' AS one_argument_works;

-- 1.6 to 1.7 directly: the functions of public IDs (issue 40) arrive.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.6';
SELECT to_regprocedure('snowflake_to_public(bigint,text)') IS NULL AS no_public_ids_under_1_6;
ALTER EXTENSION snowflake UPDATE TO '1.7';
SELECT p.oid::regprocedure AS function, provolatile, proisstrict, proparallel,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
 WHERE p.proname IN ('snowflake_to_public', 'snowflake_from_public')
 ORDER BY p.oid::regprocedure::text;

-- 1.6 to 1.7 directly: snowflake_registry_status gains its last columns,
-- registry_durability, registry_standbys and registry_history_changed_at
-- (issue 37: what the registry can lose). The view and its function are made
-- again, read by pg_monitor, not by PUBLIC. Before the update the library
-- serves 1.6's eighteen columns.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.6';
SELECT count(*) AS registry_columns_under_1_6 FROM pg_attribute
 WHERE attrelid = 'snowflake_registry_status'::regclass AND attnum > 0;
SELECT in_use, state FROM snowflake_registry_status;
ALTER EXTENSION snowflake UPDATE TO '1.7';
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'snowflake_registry_status'::regclass AND attnum > 18 ORDER BY attnum;
SELECT in_use, state, registry_durability, registry_standbys, registry_history_changed_at
  FROM snowflake_registry_status;
SELECT has_table_privilege('pg_monitor', 'snowflake_registry_status', 'SELECT') AS monitor_reads,
       has_table_privilege('public', 'snowflake_registry_status', 'SELECT') AS public_reads,
       has_function_privilege('public', 'snowflake_registry_status()', 'EXECUTE') AS public_executes,
       obj_description('snowflake_registry_status'::regclass, 'pg_class') IS NOT NULL AS view_commented,
       obj_description('snowflake_registry_status()'::regprocedure, 'pg_proc') IS NOT NULL AS function_commented;

-- 1.7 to 1.8 directly: snowflake_dump_bound arrives (issue 44), a
-- configuration table pg_dump dumps, with its row already above every ID the
-- node issued under 1.7 (the update raises it to the node's bound).
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.7';
SELECT to_regclass('snowflake_dump_bound') IS NULL AS no_dump_bound_under_1_7;
SELECT snowflake_nextval() AS issued_under_1_7 \gset
ALTER EXTENSION snowflake UPDATE TO '1.8';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT count(*) AS one_row, bool_and(ids_before > :issued_under_1_7) AS above_the_ids_of_1_7
  FROM snowflake_dump_bound;

-- 1.7 to 1.8 directly: snowflake_registry_status gains registry_waits_for and
-- registry_waiting_since (issue 47: what a stalled renewal waits for); the
-- view and its function are made again.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.7';
SELECT count(*) AS registry_columns_under_1_7 FROM pg_attribute
 WHERE attrelid = 'snowflake_registry_status'::regclass AND attnum > 0;
ALTER EXTENSION snowflake UPDATE TO '1.8';
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'snowflake_registry_status'::regclass AND attnum > 21 ORDER BY attnum;
SELECT registry_waits_for, registry_waiting_since FROM snowflake_registry_status;

-- The catalog ---------------------------------------------------------------
-- A fresh CREATE EXTENSION runs the default version's whole script
-- (snowflake--VERSION.sql); an installation of an earlier version gets
-- there by the update scripts. Every way must give the same objects. Each
-- member of the extension is described by what defines it: a function by the
-- CREATE statement PostgreSQL writes for it (a line a row), a relation by its
-- kind, columns, view definition, constraints, indexes and triggers, an
-- operator class and family by what they hold; every member's privileges
-- (the owner written as owner), its initial privileges (pg_init_privs: what
-- pg_dump takes as the extension's own), its comment and its columns'; and
-- the extension's configuration tables with their conditions and numbers of
-- rows. A member of a kind described nowhere below says so. The catalogs are
-- compared as sets: a difference is printed with the ways that give it.
CREATE FUNCTION pg_temp.privileges_text(privileges aclitem[], owner oid) RETURNS text
    LANGUAGE sql STABLE
    RETURN coalesce((SELECT string_agg(CASE WHEN grantee = owner::regrole::text THEN 'owner' ELSE grantee END
                                       || '=' || rights || '/' ||
                                       CASE WHEN grantor = owner::regrole::text THEN 'owner' ELSE grantor END,
                                       ',' ORDER BY grantee, grantor)
                       FROM (SELECT split_part(item::text, '=', 1) AS grantee,
                                    split_part(split_part(item::text, '=', 2), '/', 1) AS rights,
                                    split_part(split_part(item::text, '=', 2), '/', 2) AS grantor
                               FROM unnest(privileges) item) items),
                    'default');
CREATE TEMP VIEW snowflake_catalog AS
WITH extension AS (
    SELECT oid, extconfig, extcondition FROM pg_extension WHERE extname = 'snowflake'),
members AS (
    SELECT d.classid, d.objid, pg_describe_object(d.classid, d.objid, d.objsubid) AS object
      FROM extension e
      JOIN pg_depend d ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
                      AND d.deptype = 'e'
     -- A member relation's row type and its array come with it (members of
     -- their own from 17 on).
     WHERE NOT EXISTS (SELECT FROM pg_type t LEFT JOIN pg_type elem ON elem.oid = t.typelem
                        WHERE d.classid = 'pg_type'::regclass AND t.oid = d.objid
                          AND (t.typrelid <> 0 OR elem.typrelid <> 0))),
functions AS (
    SELECT m.object, p.* FROM members m JOIN pg_proc p ON p.oid = m.objid
     WHERE m.classid = 'pg_proc'::regclass),
relations AS (
    SELECT m.object, c.* FROM members m JOIN pg_class c ON c.oid = m.objid
     WHERE m.classid = 'pg_class'::regclass),
owners AS (
    SELECT m.classid, m.objid, coalesce(f.proowner, r.relowner) AS owner
      FROM members m
      LEFT JOIN functions f ON m.classid = 'pg_proc'::regclass AND f.oid = m.objid
      LEFT JOIN relations r ON m.classid = 'pg_class'::regclass AND r.oid = m.objid)
SELECT object, 'member' AS facet, NULL::integer AS line, '' AS value FROM members
UNION ALL
SELECT object, 'not described', NULL, 'a member of a kind sql/upgrade.sql does not describe: describe it there'
  FROM members
 WHERE classid NOT IN ('pg_proc'::regclass, 'pg_class'::regclass, 'pg_opclass'::regclass,
                       'pg_opfamily'::regclass, 'pg_cast'::regclass, 'pg_operator'::regclass)
-- Functions: arguments and their defaults, result, language, volatility,
-- strictness, parallel safety, SECURITY, cost and rows, SET clauses, body or
-- C symbol.
UNION ALL
SELECT f.object, 'definition', l.line::integer, l.text
  FROM functions f
 CROSS JOIN regexp_split_to_table(pg_get_functiondef(f.oid), '\n') WITH ORDINALITY l(text, line)
UNION ALL
SELECT object, 'privileges', NULL, pg_temp.privileges_text(proacl, proowner) FROM functions
-- Relations.
UNION ALL
SELECT object, 'relation', NULL,
       format('kind %s, persistence %s, options %s, row security %s', relkind, relpersistence,
              coalesce(reloptions::text, 'none'), relrowsecurity)
  FROM relations
UNION ALL
SELECT object, 'privileges', NULL, pg_temp.privileges_text(relacl, relowner) FROM relations
UNION ALL
SELECT r.object, 'definition', l.line::integer, l.text
  FROM relations r
 CROSS JOIN regexp_split_to_table(pg_get_viewdef(r.oid), '\n') WITH ORDINALITY l(text, line)
 WHERE r.relkind IN ('v', 'm')
UNION ALL
SELECT r.object, 'column', a.attnum,
       concat_ws(' ', quote_ident(a.attname), format_type(a.atttypid, a.atttypmod),
                 CASE WHEN a.attnotnull THEN 'NOT NULL' END,
                 'DEFAULT ' || pg_get_expr(ad.adbin, ad.adrelid),
                 'privileges ' || pg_temp.privileges_text(a.attacl, r.relowner))
  FROM relations r
  JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
UNION ALL
SELECT r.object, 'constraint ' || k.conname, NULL, pg_get_constraintdef(k.oid)
  FROM relations r JOIN pg_constraint k ON k.conrelid = r.oid
UNION ALL
SELECT r.object, 'index', NULL, pg_get_indexdef(i.indexrelid)
  FROM relations r JOIN pg_index i ON i.indrelid = r.oid
UNION ALL
SELECT r.object, 'trigger ' || t.tgname, NULL,
       pg_get_triggerdef(t.oid) || ' (enabled ' || t.tgenabled::text || ')'
  FROM relations r JOIN pg_trigger t ON t.tgrelid = r.oid AND NOT t.tgisinternal
-- Operator classes and families: the class's family, default and key type;
-- the family's operators and support functions, each bound to the class or
-- loose in the family.
UNION ALL
SELECT m.object, 'operator class', NULL,
       format('%s, default %s, key type %s', pg_describe_object('pg_opfamily'::regclass, c.opcfamily, 0),
              c.opcdefault, coalesce(nullif(c.opckeytype, 0)::regtype::text, 'none'))
  FROM members m JOIN pg_opclass c ON c.oid = m.objid WHERE m.classid = 'pg_opclass'::regclass
UNION ALL
SELECT m.object, 'operator family', NULL,
       pg_describe_object(d.classid, d.objid, 0) || ', bound to the '
       || CASE d.refclassid WHEN 'pg_opclass'::regclass THEN 'class' ELSE 'family' END
  FROM members m
  JOIN pg_depend d ON d.classid IN ('pg_amop'::regclass, 'pg_amproc'::regclass)
                  AND d.refclassid IN ('pg_opclass'::regclass, 'pg_opfamily'::regclass)
                  AND d.deptype IN ('a', 'i')
  JOIN (SELECT 'pg_amop'::regclass AS classid, oid, amopfamily AS family FROM pg_amop
        UNION ALL
        SELECT 'pg_amproc'::regclass, oid, amprocfamily FROM pg_amproc) f
    ON f.classid = d.classid AND f.oid = d.objid AND f.family = m.objid
 WHERE m.classid = 'pg_opfamily'::regclass
-- Casts and operators (none yet).
UNION ALL
SELECT m.object, 'cast', NULL,
       format('function %s, context %s, method %s',
              coalesce(nullif(c.castfunc, 0)::regprocedure::text, 'none'), c.castcontext, c.castmethod)
  FROM members m JOIN pg_cast c ON c.oid = m.objid WHERE m.classid = 'pg_cast'::regclass
UNION ALL
SELECT m.object, 'operator', NULL,
       format('function %s, commutator %s, negator %s, restrict %s, join %s, hashes %s, merges %s',
              o.oprcode, o.oprcom::regoperator, o.oprnegate::regoperator, o.oprrest, o.oprjoin,
              o.oprcanhash, o.oprcanmerge)
  FROM members m JOIN pg_operator o ON o.oid = m.objid WHERE m.classid = 'pg_operator'::regclass
-- Comments, of every member and of its columns.
UNION ALL
SELECT m.object, CASE WHEN ds.objsubid = 0 THEN 'comment' ELSE 'comment on column' END,
       nullif(ds.objsubid, 0), ds.description
  FROM members m JOIN pg_description ds ON ds.classoid = m.classid AND ds.objoid = m.objid
-- Initial privileges, of every member and of its columns.
UNION ALL
SELECT m.object, 'initial privileges', nullif(ip.objsubid, 0),
       ip.privtype::text || ' ' || pg_temp.privileges_text(ip.initprivs, o.owner)
  FROM members m
  JOIN pg_init_privs ip ON ip.classoid = m.classid AND ip.objoid = m.objid
  JOIN owners o ON o.classid = m.classid AND o.objid = m.objid
-- The configuration tables pg_dump dumps.
UNION ALL
SELECT 'extension snowflake', 'dumps ' || c.config::regclass::text, NULL,
       format('WHERE %L, %s rows', c.condition,
              (xpath('/row/n/text()',
                     query_to_xml(format('SELECT count(*) AS n FROM %s', c.config::regclass),
                                  false, true, '')))[1]::text)
  FROM extension e CROSS JOIN unnest(e.extconfig, e.extcondition) c(config, condition);

CREATE TEMP TABLE catalogs (way text, object text, facet text, line integer, value text);
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
INSERT INTO catalogs SELECT 'created', * FROM snowflake_catalog;
-- The versions, from the scripts' update paths: pg_available_extension_versions
-- lists none where the scripts are found through Debian's extension_destdir
-- (a package's build-time test), which CREATE and ALTER EXTENSION follow.
CREATE TEMP TABLE versions AS
SELECT DISTINCT source AS version, source = (SELECT extversion FROM pg_extension
                                              WHERE extname = 'snowflake') AS is_default
  FROM pg_extension_update_paths('snowflake');
-- By a role that is not a superuser (the extension is trusted).
DROP EXTENSION snowflake;
CREATE ROLE regress_snowflake_creator;
DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO regress_snowflake_creator', current_database()); END $$;
SET ROLE regress_snowflake_creator;
CREATE EXTENSION snowflake;
RESET ROLE;
INSERT INTO catalogs SELECT 'created by a role that is not a superuser', * FROM snowflake_catalog;
DROP EXTENSION snowflake;
DO $$ BEGIN EXECUTE format('REVOKE CREATE ON DATABASE %I FROM regress_snowflake_creator', current_database()); END $$;
DROP ROLE regress_snowflake_creator;
-- Updated from each earlier version to the default one.
SELECT statement
  FROM versions v,
       unnest(ARRAY[format('CREATE EXTENSION snowflake VERSION %L', v.version),
                    'ALTER EXTENSION snowflake UPDATE',
                    format('INSERT INTO catalogs SELECT %L, * FROM snowflake_catalog',
                           'updated from ' || v.version),
                    'DROP EXTENSION snowflake']) WITH ORDINALITY s(statement, step)
 WHERE NOT v.is_default
 ORDER BY string_to_array(v.version, '.')::integer[], s.step \gexec
-- From 1.0, one version at a time.
CREATE EXTENSION snowflake VERSION '1.0';
SELECT format('ALTER EXTENSION snowflake UPDATE TO %L', version)
  FROM versions
 WHERE version <> '1.0'
 ORDER BY string_to_array(version, '.')::integer[] \gexec
INSERT INTO catalogs SELECT 'updated from 1.0, one version at a time', * FROM snowflake_catalog;
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;

-- The ways compared, and what the extension holds.
SELECT way FROM catalogs GROUP BY way ORDER BY way;
SELECT object FROM catalogs WHERE way = 'created' AND facet = 'member' ORDER BY object;
-- The differences: a row of a description that not every way gives, with the
-- ways that give it (none when every way gives the same catalog).
WITH counted AS (
    SELECT object, facet, line, value, way, count(*) AS n FROM catalogs GROUP BY 1, 2, 3, 4, 5),
every_way AS (
    SELECT r.object, r.facet, r.line, r.value, w.way, coalesce(c.n, 0) AS n
      FROM (SELECT DISTINCT object, facet, line, value FROM catalogs) r
     CROSS JOIN (SELECT DISTINCT way FROM catalogs) w
      LEFT JOIN counted c ON (c.object, c.facet, c.way) = (r.object, r.facet, w.way)
                         AND c.line IS NOT DISTINCT FROM r.line AND c.value IS NOT DISTINCT FROM r.value)
SELECT object, facet, line, value,
       string_agg(way || CASE WHEN n > 1 THEN format(' (%s times)', n) ELSE '' END, '; ' ORDER BY way)
           FILTER (WHERE n > 0) AS given_by
  FROM every_way
 GROUP BY object, facet, line, value
HAVING min(n) <> max(n)
 ORDER BY object, facet, line, given_by;
