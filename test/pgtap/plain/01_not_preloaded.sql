-- A server without shared_preload_libraries = 'snowflake': CREATE EXTENSION
-- works, decoding works, and issuing IDs fails with an error that says what
-- to add to postgresql.conf.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(13);

\ir ../error_of.sql

SELECT is(current_setting('shared_preload_libraries'), '', 'snowflake is not preloaded');
SELECT lives_ok('CREATE EXTENSION snowflake', 'CREATE EXTENSION snowflake works without the preload');
SELECT throws_ok('SELECT snowflake_nextval()', '55000', 'snowflake must be loaded via shared_preload_libraries',
                 'snowflake_nextval() fails with a clear error');
SELECT matches((pg_temp.error_of('SELECT snowflake_nextval()')).hint,
               'shared_preload_libraries = ''snowflake''.*restart',
               'the hint says what to add to postgresql.conf, and to restart');
SELECT throws_ok('SELECT * FROM snowflake_generate(3)', '55000', NULL, 'snowflake_generate() fails the same way');
SELECT throws_ok('SELECT * FROM snowflake_status', '55000', NULL, 'so does the status view');
SELECT is((SELECT problem FROM snowflake_node_identity()),
          'snowflake is not in shared_preload_libraries: it issues no IDs',
          'snowflake_node_identity() says why the node issues no IDs');
SELECT is((SELECT worker_id FROM snowflake_decode(1541815603606036480)), 26, 'decoding works');
SELECT is(snowflake_from_base32(snowflake_to_base32(123456789)), 123456789::bigint, 'base32 works');
SELECT throws_ok('SELECT snowflake_to_public(1)', '55000', 'no key for public IDs is configured',
                 'public IDs need a key, preloaded or not');
-- A parallel worker never reads the key file, and without the preload it
-- cannot have its leader's keys: a call in one fails, saying so (issue 45);
-- with no worker, the session answers itself.
SELECT is(set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                          THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'on', true),
          'on', 'statements run in a parallel worker');
SELECT throws_ok('SELECT snowflake_to_public(1)', '55000', 'a parallel worker has no key for public IDs',
                 'without the preload, a call in a parallel worker has no key');
SET LOCAL max_parallel_workers = 0;
SELECT throws_ok('SELECT snowflake_to_public(1)', '55000', 'no key for public IDs is configured',
                 'with max_parallel_workers = 0, the session calls it itself');

SELECT * FROM finish();
ROLLBACK;
