-- snowflake_registry_status, as snowflake_status: readable by pg_monitor and
-- by anyone granted the view, through the view or the function; nobody else.
CREATE EXTENSION IF NOT EXISTS snowflake;
\set SHOW_CONTEXT never

-- No registry is configured here.
SELECT in_use, state, automatic, last_error FROM snowflake_registry_status;
-- Nor, so, any registry to ask what it can lose (1.7).
SELECT registry_durability, registry_standbys, registry_history_changed_at
  FROM snowflake_registry_status;
-- Nor a claim or renewal waiting there (1.8).
SELECT registry_waits_for, registry_waiting_since FROM snowflake_registry_status;

CREATE ROLE regress_snowflake_stranger;
CREATE ROLE regress_snowflake_monitor IN ROLE pg_monitor;
CREATE ROLE regress_snowflake_granted;
GRANT SELECT ON snowflake_registry_status TO regress_snowflake_granted;
SET ROLE regress_snowflake_stranger;
SELECT state FROM snowflake_registry_status;
\echo :LAST_ERROR_SQLSTATE
SELECT state FROM snowflake_registry_status();
\echo :LAST_ERROR_SQLSTATE
SET ROLE regress_snowflake_monitor;
SELECT state FROM snowflake_registry_status;
SELECT state FROM snowflake_registry_status();
SET ROLE regress_snowflake_granted;
SELECT state FROM snowflake_registry_status;
SELECT state FROM snowflake_registry_status();
RESET ROLE;
REVOKE SELECT ON snowflake_registry_status FROM regress_snowflake_granted;
DROP ROLE regress_snowflake_stranger, regress_snowflake_monitor, regress_snowflake_granted;
