-- Without the preload the library is loaded by each session, and until then
-- any role can SET the placeholders of snowflake.*. An ordinary role sets a
-- whole other layout before this session loads the library: the IMMUTABLE
-- functions still follow the server's layout (here the default), SHOW shows
-- the server's values, and every SET afterwards fails.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(25);

\ir ../error_of.sql

-- An ordinary role that may create the (trusted) extension.
CREATE ROLE snowflake_layout_user;
DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO snowflake_layout_user', current_database()); END $$;
GRANT CREATE ON SCHEMA public TO snowflake_layout_user;
GRANT EXECUTE ON FUNCTION pg_temp.error_of(text) TO snowflake_layout_user;
SET ROLE snowflake_layout_user;

SELECT is(current_setting('snowflake.worker_bits', true), NULL,
          'the library is not loaded in this session yet');

-- 39 + 0 + 10 + 14 = 63 bits: a valid layout, and another one.
SET snowflake.timestamp_bits = 39;
SET snowflake.datacenter_bits = 0;
SET snowflake.worker_bits = 10;
SELECT set_config('snowflake.sequence_bits', '14', false);
SET LOCAL snowflake.epoch = 1600000000000;
SET snowflake.layout = 'sonyflake';
SELECT is(current_setting('snowflake.worker_bits'), '10', 'an ordinary role can SET the placeholder');

-- Loading the library refuses the session's values (PostgreSQL warns).
SET client_min_messages = error;
CREATE EXTENSION snowflake;
RESET client_min_messages;

SELECT is(current_setting('snowflake.timestamp_bits'), '41', 'SHOW gives the server''s timestamp_bits');
SELECT is(current_setting('snowflake.datacenter_bits'), '5', 'SHOW gives the server''s datacenter_bits');
SELECT is(current_setting('snowflake.worker_bits'), '5', 'SHOW gives the server''s worker_bits');
SELECT is(current_setting('snowflake.sequence_bits'), '12', 'SHOW gives the server''s sequence_bits');
SELECT is(current_setting('snowflake.epoch'), '1288834974657', 'SHOW gives the server''s epoch');
SELECT is(current_setting('snowflake.layout'), '', 'SHOW gives the server''s layout (none: the widths)');

-- 2124549222331764758: 506532006819 ms after the default epoch,
-- datacenter_id 21, worker_id 13, sequence 22 in the default layout.
SELECT is((SELECT row(ts, datacenter_id, worker_id, sequence)::text FROM snowflake_decode(2124549222331764758)),
          row('2026-11-22 17:03:01.476+00'::timestamptz, 21, 13, 22)::text,
          'snowflake_decode follows the server''s layout');
SELECT is(snowflake_compose('2026-11-22 17:03:01.476+00', 21, 13, 22), 2124549222331764758::bigint,
          'snowflake_compose follows the server''s layout');
SELECT is(snowflake_min_id('2026-11-22 17:03:01.476+00'), 506532006819::bigint << 22,
          'snowflake_min_id follows the server''s layout');
SELECT is(snowflake_max_id('2026-11-22 17:03:01.476+00'), (506532006819::bigint << 22) | 4194303,
          'snowflake_max_id follows the server''s layout');

RESET ROLE;
CREATE TABLE routed (id bigint) PARTITION BY HASH (id snowflake_node_ops);
CREATE TABLE routed_685 PARTITION OF routed FOR VALUES WITH (MODULUS 1024, REMAINDER 685);
GRANT SELECT ON routed TO snowflake_layout_user;
SET ROLE snowflake_layout_user;
SELECT ok(satisfies_hash_partition('routed'::regclass, 1024, 685, 2124549222331764758::bigint),
          'snowflake_node_ops routes by the server''s layout (node 21 * 32 + 13)');

-- Once loaded, no session can change the layout.
SELECT throws_ok('SET snowflake.worker_bits = 10', '55P02', NULL, 'SET of a width fails');
SELECT throws_ok('SET LOCAL snowflake.epoch = 0', '55P02', NULL, 'SET LOCAL of the epoch fails');
SELECT throws_ok($$SELECT set_config('snowflake.datacenter_bits', '0', false)$$, '55P02', NULL,
                 'set_config() fails');
SELECT throws_ok('RESET snowflake.sequence_bits', '55P02', NULL, 'RESET fails');
SELECT throws_ok($$SET snowflake.layout = 'discord'$$, '55P02', NULL, 'SET of the layout fails');
SELECT throws_ok('SET snowflake.no_such_setting = 1', '42602', NULL,
                 'the snowflake prefix is reserved: no new placeholders');
SELECT is(current_setting('snowflake.worker_bits'), '5', 'worker_bits is still the server''s');
SELECT is((SELECT worker_id FROM snowflake_decode(2124549222331764758)), 13, 'decoding is unchanged');

RESET ROLE;
SELECT is((SELECT context FROM pg_settings WHERE name = 'snowflake.worker_bits'), 'sighup',
          'without the preload the widths are reload settings (only the server''s configuration sets them)');
SELECT is((SELECT context FROM pg_settings WHERE name = 'snowflake.epoch'), 'sighup',
          'and so is the epoch');
SELECT is((SELECT context FROM pg_settings WHERE name = 'snowflake.layout'), 'sighup',
          'and the layout');
SELECT throws_ok('SET snowflake.worker_bits = 10', '55P02', NULL, 'not even a superuser can SET it');

SELECT * FROM finish();
ROLLBACK;
