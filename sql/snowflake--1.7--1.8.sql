-- snowflake 1.8.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.8'" to load this file. \quit

-- The dump carries the bound (issue 44) --------------------------------------
-- snowflake_dump_bound: one row, ids_before, above every ID this node issued
-- in this database, and system_identifier, the cluster whose bound covers it
-- (a restart after a clean shutdown lowers this cluster's own bound to the
-- exact one, and need not take its own row again; another cluster's row,
-- upgraded or restored without the trigger, is taken by the first ID issued
-- here). A configuration table of the extension, so pg_dump and
-- pg_dumpall dump its row with the database's data. The backends of this
-- database raise the row in place to the node's durable bound before they
-- return IDs at or past it (src/pg/bound/carrier.cpp states the protocol);
-- an INSERT or a COPY of a restore does not add a row: its trigger raises the
-- node's bound to the row's and merges the row into this one. UPDATE, DELETE
-- and TRUNCATE are refused: a new version of the row would lose the raises.
-- PUBLIC may read it (every role's pg_dump reads it) and insert (every role's
-- restore writes it; the trigger decides what a role may give the node).
-- The first row is inserted through the trigger, which raises it to the
-- node's bound where it is known (0 where it is not: it vouches for nothing).
CREATE TABLE snowflake_dump_bound (
    ids_before bigint NOT NULL,
    system_identifier bigint NOT NULL);

COMMENT ON TABLE snowflake_dump_bound IS
    'One row: every ID this node issued in this database is below ids_before; pg_dump carries it, and a restore raises the node''s bound to it';
COMMENT ON COLUMN snowflake_dump_bound.ids_before IS
    'An ID above every ID this node issued in this database (as a number, whatever the layout)';
COMMENT ON COLUMN snowflake_dump_bound.system_identifier IS
    'The system identifier (as pg_control_system() shows it) of the cluster whose bound covers ids_before';

CREATE FUNCTION snowflake_dump_bound_insert() RETURNS trigger
    AS 'MODULE_PATHNAME', 'snowflake_dump_bound_insert'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_dump_bound_insert() IS
    'Trigger of snowflake_dump_bound: a restored row raises this node''s bound and is merged into the table''s one row';

CREATE FUNCTION snowflake_dump_bound_refuse() RETURNS trigger
    AS 'MODULE_PATHNAME', 'snowflake_dump_bound_refuse'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_dump_bound_refuse() IS
    'Trigger of snowflake_dump_bound: refuses UPDATE, DELETE and TRUNCATE, which would lose the bound';

REVOKE EXECUTE ON FUNCTION snowflake_dump_bound_insert() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION snowflake_dump_bound_refuse() FROM PUBLIC;

CREATE TRIGGER snowflake_dump_bound_insert BEFORE INSERT ON snowflake_dump_bound
    FOR EACH ROW EXECUTE FUNCTION snowflake_dump_bound_insert();
CREATE TRIGGER snowflake_dump_bound_refuse BEFORE UPDATE OR DELETE ON snowflake_dump_bound
    FOR EACH ROW EXECUTE FUNCTION snowflake_dump_bound_refuse();
CREATE TRIGGER snowflake_dump_bound_refuse_truncate BEFORE TRUNCATE ON snowflake_dump_bound
    FOR EACH STATEMENT EXECUTE FUNCTION snowflake_dump_bound_refuse();

INSERT INTO snowflake_dump_bound VALUES (0, 0);

SELECT pg_catalog.pg_extension_config_dump('snowflake_dump_bound', '');

REVOKE ALL ON snowflake_dump_bound FROM PUBLIC;
GRANT SELECT, INSERT ON snowflake_dump_bound TO PUBLIC;
-- End of issue 44's part ------------------------------------------------------

-- What the registry waits for (issue 47) -------------------------------------
-- snowflake_registry_status gains two last columns: registry_waits_for (what
-- the registry's session of this node's slow claim or renewal waits for:
-- 'synchronous standbys' for the wait event SyncRep, of that session or of the
-- one holding its row's lock; else the wait event, such as 'Lock:
-- transactionid'; NULL when none waits) and registry_waiting_since (when the
-- first stalled request was sent). A function's columns cannot change in
-- place: the view and its function are made again, with the privileges the
-- extension grants (as 1.3 made them); a privilege granted on the view by
-- hand must be granted again.
DROP VIEW snowflake_registry_status;
DROP FUNCTION snowflake_registry_status();

CREATE FUNCTION snowflake_registry_status(
        OUT in_use boolean,
        OUT state text,
        OUT automatic boolean,
        OUT datacenter_id integer,
        OUT worker_id integer,
        OUT system_identifier numeric,
        OUT claimed_at timestamptz,
        OUT renewed_at timestamptz,
        OUT expires_at timestamptz,
        OUT valid_until timestamptz,
        OUT conflict_host text,
        OUT conflict_data_directory text,
        OUT conflict_system_identifier numeric,
        OUT conflict_timeline bigint,
        OUT conflict_since timestamptz,
        OUT conflict_expires_at timestamptz,
        OUT last_error text,
        OUT last_error_at timestamptz,
        OUT registry_durability text,
        OUT registry_standbys integer,
        OUT registry_history_changed_at timestamptz,
        OUT registry_waits_for text,
        OUT registry_waiting_since timestamptz)
    RETURNS record
    AS 'MODULE_PATHNAME', 'snowflake_registry_status'
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_registry_status() IS
    'This node''s lease in the snowflake.registry database: state (disabled, starting, standby, unconfigured, held, expired, conflict, unreachable, exhausted, released), identity, lease times, the other node in a conflict, the last error, what the registry can lose (registry_durability: synchronous, no standby, asynchronous standbys, in recovery), what a stalled claim or renewal waits for there (registry_waits_for: synchronous standbys, or a wait event) (needs SELECT on snowflake_registry_status)';

CREATE VIEW snowflake_registry_status AS SELECT * FROM snowflake_registry_status();

COMMENT ON VIEW snowflake_registry_status IS
    'One row: this node''s lease in the snowflake.registry database';

REVOKE ALL ON snowflake_registry_status FROM PUBLIC;
GRANT SELECT ON snowflake_registry_status TO pg_monitor;
-- End of issue 47's part ------------------------------------------------------
