-- Issuing IDs on a node configured with snowflake.datacenter_id = 3 and
-- snowflake.worker_id = 7 (scripts/test.sh sets the cluster up).
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';
SET datestyle = 'ISO';
\set SHOW_CONTEXT never

-- Nothing returned yet in this session.
SELECT snowflake_lastval();
\echo :LAST_ERROR_SQLSTATE

-- IDs carry this node's identity and the current time.
SELECT datacenter_id, worker_id, ts > now() - interval '1 minute' AND ts <= clock_timestamp() AS ts_is_now
  FROM snowflake_decode(snowflake_nextval());
SELECT snowflake_nextval() AS first \gset
SELECT snowflake_lastval() = :first AS lastval_is_last;
SELECT snowflake_nextval() > :first AS increasing;

-- Strictly increasing within a statement, and unique.
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       bool_and(id > prev) AS strictly_increasing
  FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev
          FROM (SELECT n, snowflake_nextval() AS id FROM generate_series(1, 100000) n) s) t;

-- As a column default; a rolled-back transaction's IDs are never reissued.
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
BEGIN;
INSERT INTO orders (item) VALUES ('lost');
SELECT snowflake_lastval() AS rolled_back \gset
ROLLBACK;
INSERT INTO orders (item) VALUES ('book'), ('pen') RETURNING id > :rolled_back AS after_rollback, item;
SELECT item, datacenter_id, worker_id FROM orders, snowflake_decode(id) ORDER BY id;

-- snowflake_generate(n): n IDs, strictly increasing, above everything before.
SELECT count(*) AS ids, count(DISTINCT g) AS distinct_ids, min(g) > :first AS above_earlier
  FROM snowflake_generate(50000) g;
SELECT bool_and(id > prev) AS strictly_increasing
  FROM (SELECT id, lag(id) OVER (ORDER BY ord) AS prev
          FROM snowflake_generate(20000) WITH ORDINALITY AS g(id, ord)) s;
SELECT g = snowflake_lastval() AS lastval_is_last_generated
  FROM (SELECT max(g) AS g FROM snowflake_generate(10) g) s;
SELECT count(*) FROM (SELECT * FROM snowflake_generate(10000000) LIMIT 3) s;
SELECT * FROM snowflake_generate(0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_generate(10000001);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS ids_for_null FROM snowflake_generate(NULL);

-- An ordinary role can issue IDs, but cannot change the node's identity or policy.
CREATE ROLE regress_snowflake_user;
GRANT ALL ON orders TO regress_snowflake_user;
SET ROLE regress_snowflake_user;
INSERT INTO orders (item) VALUES ('by an ordinary role');
SET snowflake.worker_id = 8;
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SET LOCAL snowflake.max_lead = 1000;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
ALTER SYSTEM SET snowflake.worker_id = 8;
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- Nor can a superuser in a session: they are the server's settings.
SET snowflake.datacenter_id = 4;
\echo :LAST_ERROR_SQLSTATE
SHOW snowflake.datacenter_id;
SHOW snowflake.worker_id;
-- Values out of range are refused by the GUC machinery, with the range.
ALTER SYSTEM SET snowflake.worker_id = 32;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.max_clock_backward_wait = '2min';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.epoch = 9223372036854775000;
\echo :LAST_ERROR_SQLSTATE
SET snowflake.no_such_setting = 1;
\echo :LAST_ERROR_SQLSTATE
DROP TABLE orders;
DROP ROLE regress_snowflake_user;
