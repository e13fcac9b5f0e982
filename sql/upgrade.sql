-- Version 1.0 installs, and ALTER EXTENSION UPDATE brings it to 1.1, then to
-- 1.2, then to the default version; 1.1 installed as such updates to 1.2
-- too, 1.2 to 1.3, 1.3 to 1.4, 1.4 to 1.5, 1.5 to 1.6, 1.6 to 1.7 and 1.7 to
-- 1.8.
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
SELECT p.oid::regprocedure AS function, provolatile, proisstrict, proparallel,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
 ORDER BY p.oid::regprocedure::text;
SELECT classid::regclass, objid::regclass AS view
  FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
 WHERE classid = 'pg_class'::regclass AND deptype = 'e' ORDER BY objid::regclass::text;

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

-- 1.2 to 1.3 directly (and on to 1.4): snowflake_registry_status gets its view, granted to
-- pg_monitor, and the function's EXECUTE goes back to PUBLIC (the function
-- checks SELECT on the view).
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.2';
SELECT to_regclass('snowflake_registry_status') IS NULL AS no_view,
       has_function_privilege('public', 'snowflake_registry_status()', 'EXECUTE') AS public_executes,
       has_function_privilege('pg_monitor', 'snowflake_registry_status()', 'EXECUTE') AS monitor_executes;
-- Under 1.2's script the function's EXECUTE grant is still what guards it.
SELECT in_use, state FROM snowflake_registry_status();
ALTER EXTENSION snowflake UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT has_table_privilege('pg_monitor', 'snowflake_registry_status', 'SELECT') AS monitor_reads,
       has_table_privilege('public', 'snowflake_registry_status', 'SELECT') AS public_reads,
       has_function_privilege('public', 'snowflake_registry_status()', 'EXECUTE') AS public_executes,
       obj_description('snowflake_registry_status'::regclass, 'pg_class') IS NOT NULL AS commented;
SELECT in_use, state FROM snowflake_registry_status;

-- 1.3 to 1.4 directly.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.3';
ALTER EXTENSION snowflake UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
-- 1.4's functions that give a node its bound are not for PUBLIC.
SELECT p.oid::regprocedure AS function,
       has_function_privilege('public', p.oid, 'EXECUTE') AS public_executes
  FROM pg_proc p WHERE proname IN ('snowflake_restore_bound', 'snowflake_set_bound') ORDER BY 1;
-- Identities across a cluster (issue 21): the update brings both functions.
SELECT p.oid::regprocedure AS function, provolatile, proisstrict, proparallel,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
 WHERE p.proname IN ('snowflake_node_identity', 'snowflake_cluster_identities')
 ORDER BY p.oid::regprocedure::text;
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
SELECT v AS view,
       has_table_privilege('pg_monitor', v, 'SELECT') AS monitor_reads,
       has_table_privilege('public', v, 'SELECT') AS public_reads,
       obj_description(v::regclass, 'pg_class') IS NOT NULL AS view_commented,
       obj_description((v || '()')::regprocedure, 'pg_proc') IS NOT NULL AS function_commented
  FROM unnest(ARRAY['snowflake_status', 'snowflake_backend_status']) v;

-- 1.6 to 1.7 directly: snowflake_set_bound gains allow_far_future (issue 41),
-- DEFAULT false, so a call with the time alone works as before; still not for
-- PUBLIC, still commented. The updated extension's functions and views
-- (columns, privileges, comments) are then the same as those of one created
-- at 1.7.
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
CREATE TEMP TABLE updated_functions AS
SELECT p.oid::regprocedure::text AS function, pg_get_function_arguments(p.oid) AS arguments,
       pg_get_function_result(p.oid) AS result, p.prosrc, p.probin, p.prolang, p.provolatile,
       p.proisstrict, p.proparallel, p.prosecdef, p.proconfig, p.proacl::text AS acl,
       obj_description(p.oid, 'pg_proc') AS comment
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake';
CREATE TEMP TABLE updated_views AS
SELECT c.relname::text AS view, a.attnum, a.attname::text, format_type(a.atttypid, a.atttypmod) AS type,
       c.relacl::text AS acl, obj_description(c.oid, 'pg_class') AS comment
  FROM pg_class c JOIN pg_depend d ON d.objid = c.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
 WHERE c.relkind = 'v';
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.7';
CREATE TEMP TABLE created_views AS
SELECT c.relname::text AS view, a.attnum, a.attname::text, format_type(a.atttypid, a.atttypmod) AS type,
       c.relacl::text AS acl, obj_description(c.oid, 'pg_class') AS comment
  FROM pg_class c JOIN pg_depend d ON d.objid = c.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
 WHERE c.relkind = 'v';
SELECT view, count(*) AS columns FROM created_views GROUP BY view ORDER BY view;
SELECT 'only updated' AS side, view, attname FROM (TABLE updated_views EXCEPT TABLE created_views) u
UNION ALL
SELECT 'only created', view, attname FROM (TABLE created_views EXCEPT TABLE updated_views) c
ORDER BY 1, 2, 3;
CREATE TEMP TABLE created_functions AS
SELECT p.oid::regprocedure::text AS function, pg_get_function_arguments(p.oid) AS arguments,
       pg_get_function_result(p.oid) AS result, p.prosrc, p.probin, p.prolang, p.provolatile,
       p.proisstrict, p.proparallel, p.prosecdef, p.proconfig, p.proacl::text AS acl,
       obj_description(p.oid, 'pg_proc') AS comment
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake';
SELECT count(*) AS functions FROM created_functions;
SELECT 'only updated' AS side, function FROM (TABLE updated_functions EXCEPT TABLE created_functions) u
UNION ALL
SELECT 'only created', function FROM (TABLE created_functions EXCEPT TABLE updated_functions) c
ORDER BY 1, 2;

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
-- serves 1.6's eighteen columns. The views' grants, definitions and comments
-- are then the same as those of an extension created at 1.7 (their columns
-- are compared above).
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
CREATE TEMP TABLE updated_view_grants AS
SELECT c.relname, c.relacl::text AS acl, pg_get_viewdef(c.oid) AS definition,
       obj_description(c.oid, 'pg_class') AS comment
  FROM pg_class c JOIN pg_depend d ON d.objid = c.oid AND d.classid = 'pg_class'::regclass AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
 WHERE c.relkind = 'v';
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.7';
CREATE TEMP TABLE created_view_grants AS
SELECT c.relname, c.relacl::text AS acl, pg_get_viewdef(c.oid) AS definition,
       obj_description(c.oid, 'pg_class') AS comment
  FROM pg_class c JOIN pg_depend d ON d.objid = c.oid AND d.classid = 'pg_class'::regclass AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
 WHERE c.relkind = 'v';
SELECT count(*) AS views FROM created_view_grants;
SELECT 'only updated' AS side, relname FROM (TABLE updated_view_grants EXCEPT TABLE created_view_grants) u
UNION ALL
SELECT 'only created', relname FROM (TABLE created_view_grants EXCEPT TABLE updated_view_grants) c
ORDER BY 1, 2;

-- 1.7 to 1.8 directly: snowflake_dump_bound arrives (issue 44), a
-- configuration table pg_dump dumps, with its row already above every ID the
-- node issued under 1.7 (the update raises it to the node's bound), its
-- triggers and its privileges; the same as an extension created at 1.8.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.7';
SELECT to_regclass('snowflake_dump_bound') IS NULL AS no_dump_bound_under_1_7;
SELECT snowflake_nextval() AS issued_under_1_7 \gset
ALTER EXTENSION snowflake UPDATE TO '1.8';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT count(*) AS one_row, bool_and(ids_before > :issued_under_1_7) AS above_the_ids_of_1_7
  FROM snowflake_dump_bound;
CREATE TEMP TABLE updated_dump_bound AS
SELECT c.relname::text, c.relacl::text AS acl, obj_description(c.oid, 'pg_class') AS comment,
       (SELECT array_agg(pg_get_triggerdef(t.oid) ORDER BY t.tgname) FROM pg_trigger t WHERE t.tgrelid = c.oid) AS triggers,
       (SELECT extcondition FROM pg_extension WHERE extname = 'snowflake') AS conditions,
       (SELECT array_length(extconfig, 1) FROM pg_extension WHERE extname = 'snowflake') AS configured
  FROM pg_class c WHERE c.relname = 'snowflake_dump_bound';
CREATE TEMP TABLE updated_functions_1_8 AS
SELECT p.oid::regprocedure::text AS function, pg_get_function_arguments(p.oid) AS arguments,
       pg_get_function_result(p.oid) AS result, p.prosrc, p.probin, p.provolatile,
       p.proisstrict, p.proparallel, p.proacl::text AS acl, obj_description(p.oid, 'pg_proc') AS comment
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake';
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT (SELECT count(*) FROM updated_dump_bound) AS updated,
       (SELECT count(*) FROM (TABLE updated_dump_bound EXCEPT
        SELECT c.relname::text, c.relacl::text, obj_description(c.oid, 'pg_class'),
               (SELECT array_agg(pg_get_triggerdef(t.oid) ORDER BY t.tgname) FROM pg_trigger t WHERE t.tgrelid = c.oid),
               (SELECT extcondition FROM pg_extension WHERE extname = 'snowflake'),
               (SELECT array_length(extconfig, 1) FROM pg_extension WHERE extname = 'snowflake')
          FROM pg_class c WHERE c.relname = 'snowflake_dump_bound') d) AS differing_from_created;
SELECT 'only updated' AS side, function FROM (TABLE updated_functions_1_8 EXCEPT
SELECT p.oid::regprocedure::text, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid), p.prosrc,
       p.probin, p.provolatile, p.proisstrict, p.proparallel, p.proacl::text, obj_description(p.oid, 'pg_proc')
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake') u
ORDER BY 1, 2;

-- 1.7 to 1.8 directly: snowflake_registry_status gains registry_waits_for and
-- registry_waiting_since (issue 47: what a stalled renewal waits for); the
-- view and its function are made again, with the grants, definition and
-- comment of an extension created at 1.8.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.7';
SELECT count(*) AS registry_columns_under_1_7 FROM pg_attribute
 WHERE attrelid = 'snowflake_registry_status'::regclass AND attnum > 0;
ALTER EXTENSION snowflake UPDATE TO '1.8';
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'snowflake_registry_status'::regclass AND attnum > 21 ORDER BY attnum;
SELECT registry_waits_for, registry_waiting_since FROM snowflake_registry_status;
CREATE TEMP TABLE updated_view_grants_1_8 AS
SELECT c.relname, c.relacl::text AS acl, pg_get_viewdef(c.oid) AS definition,
       obj_description(c.oid, 'pg_class') AS comment
  FROM pg_class c JOIN pg_depend d ON d.objid = c.oid AND d.classid = 'pg_class'::regclass AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
 WHERE c.relkind = 'v';
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.8';
SELECT 'only updated' AS side, relname FROM (TABLE updated_view_grants_1_8 EXCEPT
SELECT c.relname, c.relacl::text, pg_get_viewdef(c.oid), obj_description(c.oid, 'pg_class')
  FROM pg_class c JOIN pg_depend d ON d.objid = c.oid AND d.classid = 'pg_class'::regclass AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
 WHERE c.relkind = 'v') u
ORDER BY 1, 2;
