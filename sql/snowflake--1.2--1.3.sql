-- snowflake 1.3: snowflake_registry_status follows the privilege model of
-- snowflake_status.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.3'" to load this file. \quit

-- Reading a view is what a role is granted: the view goes to pg_monitor, and
-- the function checks SELECT on it (granting the view is enough; calling the
-- function directly needs the same grant). Its EXECUTE is PUBLIC's again, as
-- snowflake_status's is.
CREATE VIEW snowflake_registry_status AS SELECT * FROM snowflake_registry_status();

COMMENT ON VIEW snowflake_registry_status IS
    'One row: this node''s lease in the snowflake.registry database';

REVOKE ALL ON snowflake_registry_status FROM PUBLIC;
GRANT SELECT ON snowflake_registry_status TO pg_monitor;

REVOKE EXECUTE ON FUNCTION snowflake_registry_status() FROM pg_monitor;
GRANT EXECUTE ON FUNCTION snowflake_registry_status() TO PUBLIC;

COMMENT ON FUNCTION snowflake_registry_status() IS
    'This node''s lease in the snowflake.registry database: state (disabled, starting, standby, unconfigured, held, expired, conflict, unreachable, exhausted, released), identity, lease times, the other node in a conflict, the last error (needs SELECT on snowflake_registry_status)';
