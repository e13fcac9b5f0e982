-- The loaded module, as the server sees it. PostgreSQL 18 records a module's
-- name and version from its magic block (PG_MODULE_MAGIC_EXT, through
-- src/pg/compat.hpp); earlier majors have no such record, and skip.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS snowflake;
SELECT plan(1);

SELECT CASE WHEN current_setting('server_version_num')::int >= 180000 THEN
  results_eq(
    $$SELECT module_name, version FROM pg_get_loaded_modules() WHERE file_name = 'snowflake.so'$$,
    $$VALUES ('snowflake'::text, (SELECT default_version FROM pg_available_extensions
                                   WHERE name = 'snowflake')::text)$$,
    'pg_get_loaded_modules() names the module and its version (the control file''s)')
ELSE
  skip('pg_get_loaded_modules() and PG_MODULE_MAGIC_EXT are new in PostgreSQL 18', 1)
END;

SELECT * FROM finish();
ROLLBACK;
