-- snowflake_convert_column: bigserial, serial turned bigint, and identity
-- columns become DEFAULT snowflake_nextval(), keeping their rows.
CREATE EXTENSION IF NOT EXISTS snowflake;
\set SHOW_CONTEXT never

CREATE TABLE customers (id bigserial PRIMARY KEY, name text);
CREATE TABLE invoices (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                       customer_id bigint REFERENCES customers, total numeric);
CREATE TABLE legacy (id serial PRIMARY KEY, note text);
ALTER TABLE legacy ALTER COLUMN id TYPE bigint;
INSERT INTO customers (name) VALUES ('ada'), ('grace');
INSERT INTO invoices (customer_id, total) VALUES (1, 10), (2, 20), (2, 30);
INSERT INTO legacy (note) VALUES ('old');

BEGIN;
SELECT snowflake_convert_column('customers', 'id');
SELECT snowflake_convert_column('invoices', 'id');
SELECT snowflake_convert_column('legacy', 'id');
COMMIT;

-- The defaults, and no sequence or identity left behind.
SELECT attrelid::regclass AS table, attname, attidentity, pg_get_expr(adbin, adrelid) AS default
  FROM pg_attribute JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum
 WHERE attrelid IN ('customers'::regclass, 'invoices'::regclass, 'legacy'::regclass)
 ORDER BY 1;
SELECT count(*) AS sequences_left FROM pg_class WHERE relkind = 'S';

-- Old rows keep their keys and references; new rows get snowflake IDs.
INSERT INTO customers (name) VALUES ('edsger');
INSERT INTO invoices (customer_id, total)
SELECT id, 40 FROM customers WHERE name = 'edsger';
SELECT name, id < 1000 AS old_key FROM customers ORDER BY id;
SELECT c.name, i.total, i.id < 1000 AS old_key
  FROM invoices i JOIN customers c ON c.id = i.customer_id ORDER BY i.id;
SELECT worker_id FROM invoices, snowflake_decode(id) WHERE id > 1000;

-- Refusals leave everything as it was.
SELECT snowflake_convert_column('customers', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_convert_column('customers', 'nope');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_convert_column('customers', 'name');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE small (id serial);
SELECT snowflake_convert_column('small', 'id');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE plain (id bigint DEFAULT 42);
SELECT snowflake_convert_column('plain', 'id');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE huge (id bigserial, note text);
INSERT INTO huge VALUES (9000000000000000000, 'beyond today''s IDs');
\set VERBOSITY terse
SELECT snowflake_convert_column('huge', 'id');
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
SELECT pg_get_expr(adbin, adrelid) AS default_kept FROM pg_attrdef WHERE adrelid = 'huge'::regclass;
CREATE VIEW customer_names AS SELECT name FROM customers;
SELECT snowflake_convert_column('customer_names', 'name');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_convert_column('no_such_table', 'id');
\echo :LAST_ERROR_SQLSTATE
-- A relation OID that names nothing (it used to reach LOCK TABLE as a bare
-- number: a syntax error).
SELECT snowflake_convert_column(4000000000::oid::regclass, 'id');
\echo :LAST_ERROR_SQLSTATE
-- A default that only looks like snowflake_nextval() is no snowflake default.
CREATE FUNCTION my_snowflake_nextval() RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint';
CREATE TABLE lookalike (id bigint DEFAULT my_snowflake_nextval());
SELECT snowflake_convert_column('lookalike', 'id');
\echo :LAST_ERROR_SQLSTATE
-- A sequence that another table's default uses too: refused up front, the
-- other column named, nothing changed.
CREATE TABLE first_user (id bigserial PRIMARY KEY);
CREATE TABLE second_user (id bigint DEFAULT nextval('first_user_id_seq'));
SELECT snowflake_convert_column('first_user', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT pg_get_expr(adbin, adrelid) AS default_kept FROM pg_attrdef WHERE adrelid = 'first_user'::regclass;
-- A schema whose name needs quoting, and the extension's own default found there.
CREATE SCHEMA "Sales Data";
CREATE TABLE "Sales Data"."Order" (id bigserial PRIMARY KEY);
SELECT snowflake_convert_column('"Sales Data"."Order"', 'id');
SELECT snowflake_convert_column('"Sales Data"."Order"', 'id');
\echo :LAST_ERROR_SQLSTATE

DROP TABLE invoices, customers, legacy, small, plain, huge, lookalike, second_user, first_user CASCADE;
DROP FUNCTION my_snowflake_nextval();
DROP SCHEMA "Sales Data" CASCADE;
