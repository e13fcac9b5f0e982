-- snowflake_dump_bound (1.8, issue 44): the row a dump carries, above every
-- ID this node issued in this database. A configuration table whose every
-- row pg_dump dumps; read and restored by every role; never updated, deleted
-- or truncated; a restored row is merged into the one row and never lowers it.
CREATE EXTENSION IF NOT EXISTS snowflake;
\set SHOW_CONTEXT never

-- The configuration dump's registration: the table, with no filter.
SELECT c.relname, e.extcondition
  FROM pg_extension x, unnest(x.extconfig, x.extcondition) AS e(reloid, extcondition)
  JOIN pg_class c ON c.oid = e.reloid
 WHERE x.extname = 'snowflake';
SELECT count(*) AS one_row FROM snowflake_dump_bound;
SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull
  FROM pg_attribute a WHERE attrelid = 'snowflake_dump_bound'::regclass AND attnum > 0;

-- Every ID returned lies below it, raised in place (no new row version).
SELECT ctid AS row_before FROM snowflake_dump_bound \gset
SELECT snowflake_nextval() AS id \gset
SELECT ids_before > :id AS above_the_id, ctid = :'row_before' AS same_row_version,
       system_identifier = (SELECT system_identifier FROM pg_control_system()) AS this_clusters
  FROM snowflake_dump_bound;
SELECT max(id) AS generated FROM snowflake_generate(10000) id \gset
SELECT ids_before > :generated AS above_generate FROM snowflake_dump_bound;
-- ... also in a transaction that rolls back, after the bound moved on.
SELECT pg_sleep(1.6);
BEGIN;
SELECT snowflake_nextval() AS rolled_back \gset
ROLLBACK;
SELECT ids_before > :rolled_back AS above_a_rolled_back_id FROM snowflake_dump_bound;

-- Privileges: PUBLIC reads (pg_dump) and inserts (restores); nothing else.
SELECT p.privilege, has_table_privilege('public', 'snowflake_dump_bound', p.privilege) AS public_has
  FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'TRIGGER', 'REFERENCES']) AS p(privilege);
SELECT p.oid::regprocedure AS function, has_function_privilege('public', p.oid, 'EXECUTE') AS public_executes,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
  FROM pg_proc p WHERE proname LIKE 'snowflake_dump_bound_%' ORDER BY 1;
SELECT obj_description('snowflake_dump_bound'::regclass, 'pg_class') IS NOT NULL AS table_commented;

-- The triggers: UPDATE, DELETE and TRUNCATE are refused, even by a superuser.
SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger
 WHERE tgrelid = 'snowflake_dump_bound'::regclass ORDER BY tgname;
UPDATE snowflake_dump_bound SET ids_before = 1;
DELETE FROM snowflake_dump_bound;
TRUNCATE snowflake_dump_bound;
SELECT snowflake_dump_bound_refuse();

-- An INSERT (a restore's row) is merged: one row still, never lowered.
SELECT ids_before AS carried FROM snowflake_dump_bound \gset
INSERT INTO snowflake_dump_bound VALUES (1, 0);
SELECT count(*), ids_before = :carried AS not_lowered FROM snowflake_dump_bound GROUP BY ids_before;
-- A role that may not run snowflake_set_bound: a bound further ahead than
-- snowflake.max_lead (0 here) is refused with a WARNING, neither taken nor
-- carried (test/t/066 restores one within max_lead); one the node's bound
-- covers changes nothing.
CREATE ROLE regress_dump_bound_restorer;
SET ROLE regress_dump_bound_restorer;
\set VERBOSITY terse
SELECT snowflake_max_id(now() + interval '1 day') AS far \gset
INSERT INTO snowflake_dump_bound VALUES (:far, 1);
SELECT ids_before < :far AS refused_bound_not_carried FROM snowflake_dump_bound;
INSERT INTO snowflake_dump_bound VALUES (snowflake_max_id(now() - interval '1 s'), 1);
SELECT count(*) AS still_one_row FROM snowflake_dump_bound;
\set VERBOSITY default
RESET ROLE;
-- Granted snowflake_set_bound, the role may give any bound: the row and the
-- node's bound rise to it (1.5 s ahead of the clock: past the node's own).
GRANT EXECUTE ON FUNCTION snowflake_set_bound(timestamptz, boolean) TO regress_dump_bound_restorer;
SET ROLE regress_dump_bound_restorer;
SELECT snowflake_max_id(clock_timestamp() + interval '1.5 s') + 1 AS granted \gset
-- (Quietly: the WARNING that IDs wait for the clock gives times.)
SET client_min_messages = error;
INSERT INTO snowflake_dump_bound VALUES (:granted, 1);
RESET client_min_messages;
RESET ROLE;
SELECT count(*), ids_before = :granted AS raised,
       system_identifier = (SELECT system_identifier FROM pg_control_system()) AS taken_as_this_clusters
  FROM snowflake_dump_bound GROUP BY ids_before, system_identifier;
SELECT durable_until >= snowflake_timestamp(:granted) AS node_bound_raised FROM snowflake_status;
REVOKE EXECUTE ON FUNCTION snowflake_set_bound(timestamptz, boolean) FROM regress_dump_bound_restorer;
DROP ROLE regress_dump_bound_restorer;
-- The clock passes the bound given, then the next ID lies above it.
SELECT pg_sleep(1.7);
SELECT snowflake_nextval() >= :granted AS next_id_above;
