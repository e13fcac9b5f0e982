-- Who may call snowflake_restore_bound(data_directory) (issue 41): it opens a
-- file the server can read, named by the caller, so beyond the REVOKE from
-- PUBLIC the function itself checks, as PostgreSQL's pg_read_file does, that
-- the caller is a superuser or a member of pg_read_server_files. A role
-- granted EXECUTE alone is refused (42501) before any file is opened; a
-- member of pg_read_server_files gets as far as the file.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS snowflake;
\ir ../error_of.sql
SELECT plan(6);

CREATE ROLE regress_snowflake_granted;
GRANT EXECUTE ON FUNCTION snowflake_restore_bound(text) TO regress_snowflake_granted;
CREATE ROLE regress_snowflake_reader IN ROLE pg_read_server_files;
GRANT EXECUTE ON FUNCTION snowflake_restore_bound(text) TO regress_snowflake_reader;
GRANT EXECUTE ON FUNCTION pg_temp.error_of(text) TO regress_snowflake_granted, regress_snowflake_reader;

-- The node's own data directory: a real state file, which the role must not
-- get to read either.
SELECT current_setting('data_directory') AS data_directory \gset

SET ROLE regress_snowflake_granted;
SELECT coalesce(code, 'none') AS code, coalesce(message, '') AS message, coalesce(hint, '') AS hint
  FROM pg_temp.error_of(format($$SELECT snowflake_restore_bound(%L)$$, :'data_directory')) \gset granted_
SELECT coalesce(code, 'none') AS missing_code FROM pg_temp.error_of($$SELECT snowflake_restore_bound('/nonexistent')$$) \gset
RESET ROLE;
SELECT is(:'granted_code'::text, '42501', 'EXECUTE alone is not enough: 42501');
SELECT is(:'granted_message'::text, 'permission denied to read snowflake state files',
          'the message says what was denied');
SELECT ok(:'granted_hint' LIKE '%pg_read_server_files%', 'the hint names the role to grant: ' || :'granted_hint');
SELECT is(:'missing_code'::text, '42501', 'refused before any file is opened (a missing one too)');

SET ROLE regress_snowflake_reader;
SELECT coalesce(code, 'none') AS reader_code FROM pg_temp.error_of($$SELECT snowflake_restore_bound('/nonexistent')$$) \gset
RESET ROLE;
SELECT is(:'reader_code'::text, '58P01', 'a member of pg_read_server_files gets as far as the file: 58P01');

SELECT is((pg_temp.error_of($$SELECT snowflake_restore_bound('/nonexistent')$$)).code, '58P01',
          'so does a superuser');

SELECT * FROM finish();
ROLLBACK;
