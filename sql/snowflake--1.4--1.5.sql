-- snowflake 1.5.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.5'" to load this file. \quit

-- Every creation of the extension ends with this script, whatever started it
-- (CREATE EXTENSION, with CASCADE, in a function or a DO block, pg_restore):
-- the library notes it, so that the node later knows this data directory
-- issued no ID before (README, "Upgrading PostgreSQL"). An ALTER EXTENSION
-- UPDATE runs it too, and the function tells the two apart. No function is
-- left behind.
CREATE FUNCTION snowflake_note_created() RETURNS void
    AS 'MODULE_PATHNAME', 'snowflake_note_created'
    LANGUAGE C VOLATILE STRICT;
SELECT snowflake_note_created();
DROP FUNCTION snowflake_note_created();
