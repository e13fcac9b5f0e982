-- Which identity this node issues under, and the cluster check without Citus:
-- it reports this node alone (test/citus/ runs it across a Citus cluster).
CREATE EXTENSION IF NOT EXISTS snowflake;
\set SHOW_CONTEXT never

SELECT datacenter_id, worker_id, source, layout, problem,
       system_identifier = (SELECT system_identifier FROM snowflake_registry_status) AS own_system_identifier
  FROM snowflake_node_identity();
SELECT node, datacenter_id, worker_id, source, layout, problem,
       system_identifier = (SELECT system_identifier FROM snowflake_registry_status) AS own_system_identifier
  FROM snowflake_cluster_identities();
-- Its identity is the one its IDs carry.
SELECT (SELECT (datacenter_id, worker_id) FROM snowflake_decode(snowflake_nextval()))
     = (SELECT (datacenter_id, worker_id) FROM snowflake_node_identity()) AS ids_carry_it;

-- Found whatever the search_path, like the extension's other functions.
SET search_path = pg_catalog;
SELECT node, problem FROM public.snowflake_cluster_identities();
RESET search_path;

-- They read the status views: pg_monitor, or the grants on both views.
CREATE ROLE regress_identity_stranger;
CREATE ROLE regress_identity_monitor IN ROLE pg_monitor;
SET ROLE regress_identity_stranger;
SELECT count(*) FROM snowflake_cluster_identities();
\echo :LAST_ERROR_SQLSTATE
SET ROLE regress_identity_monitor;
SELECT node, problem FROM snowflake_cluster_identities();
RESET ROLE;
DROP ROLE regress_identity_stranger, regress_identity_monitor;
