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
