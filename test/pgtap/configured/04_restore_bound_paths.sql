-- snowflake_restore_bound(data_directory) with paths no data directory can
-- have: a clear error (22023), never an internal one (XX000, found by the
-- sqlsmith layer's random calls: a name longer than the file system allows),
-- and never another file than the one named (a path longer than MAXPGPATH
-- was cut short, and the cut could name a real state file: here this
-- node's own).
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS snowflake;
\ir ../error_of.sql
SELECT plan(6);

SELECT is((pg_temp.error_of($$SELECT snowflake_restore_bound('/nonexistent')$$)).code, '58P01',
          'a directory without a state file: 58P01');

-- One name of 300 bytes: longer than any Linux file system takes (255).
SELECT coalesce(code, 'none') AS code, coalesce(message, '') AS message
  FROM pg_temp.error_of(format($$SELECT snowflake_restore_bound(%L)$$, '/tmp/' || repeat('x', 300))) \gset long_name_
SELECT is(:'long_name_code'::text, '22023', 'a name too long for the file system: 22023');
SELECT ok(:'long_name_message' LIKE 'path "/tmp/xxx%/pg_snowflake/state" is too long',
          'the message names the path: ' || left(:'long_name_message', 60));

-- A path whose first 1023 bytes (MAXPGPATH - 1) end in this node's own
-- state file: the data directory, "/." repeated, "/pg_snowflake/state",
-- then more.
SELECT current_setting('data_directory') AS data_directory \gset
SELECT :'data_directory' || repeat('/.', (1023 - length(:'data_directory') - 19) / 2)
       || CASE WHEN (1023 - length(:'data_directory') - 19) % 2 = 1 THEN '/' ELSE '' END AS padded \gset
SELECT is(length(:'padded' || '/pg_snowflake/state'), 1023, 'the padded path of the state file has 1023 bytes');
SELECT coalesce(code, 'none') AS code, coalesce(hint, '') AS hint
  FROM pg_temp.error_of(format($$SELECT snowflake_restore_bound(%L)$$, :'padded' || '/pg_snowflake/state/x')) \gset cut_
SELECT is(:'cut_code'::text, '22023', 'a path longer than MAXPGPATH: 22023, not the file its first 1023 bytes name');
SELECT ok(:'cut_hint' LIKE '%shorter path%', 'the hint says what to do: ' || :'cut_hint');

SELECT * FROM finish();
ROLLBACK;
