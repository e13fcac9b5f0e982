-- snowflake 1.4.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.4'" to load this file. \quit

-- Identities across a cluster (issue 21, doc/citus.md) ------------------------
-- Two nodes issuing under one (datacenter_id, worker_id) is the one mistake
-- that breaks uniqueness. snowflake_node_identity() says under which identity
-- this node issues IDs, or why it issues none; snowflake_cluster_identities()
-- asks every node of a Citus cluster (run_command_on_all_nodes) and names
-- the nodes that share an identity, have none, use another layout or stand
-- outside the registry the others lease from. Without Citus it reports this
-- node alone. Both read the status views (pg_monitor, or SELECT on
-- snowflake_status and snowflake_registry_status), on every node.

CREATE FUNCTION snowflake_node_identity(
        OUT datacenter_id integer,
        OUT worker_id integer,
        OUT source text,
        OUT layout text,
        OUT system_identifier numeric,
        OUT problem text)
    RETURNS record
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    extension_schema name;
    node record;
    registry record;
BEGIN
    SELECT extnamespace::regnamespace::name INTO extension_schema
      FROM pg_extension WHERE extname = 'snowflake';
    EXECUTE format('SELECT * FROM %I.snowflake_registry_status()', extension_schema) INTO registry;
    system_identifier := registry.system_identifier;
    IF registry.state = 'not preloaded' THEN
        -- CREATE EXTENSION reaches every Citus node; the preload does not.
        problem := 'snowflake is not in shared_preload_libraries: it issues no IDs';
        RETURN;
    END IF;
    EXECUTE format('SELECT * FROM %I.snowflake_status()', extension_schema) INTO node;
    layout := format('%s/%s/%s/%s bits, epoch %s ms', node.timestamp_bits, node.datacenter_bits,
                     node.worker_bits, node.sequence_bits,
                     (extract(epoch FROM node.epoch) * 1000)::bigint);
    IF pg_is_in_recovery() THEN
        -- A standby shares its primary's identity and issues nothing.
        source := 'standby';
        datacenter_id := coalesce(registry.datacenter_id, node.datacenter_id);
        worker_id := coalesce(registry.worker_id, node.worker_id);
    ELSIF registry.in_use THEN
        source := 'registry';
        datacenter_id := registry.datacenter_id;
        worker_id := registry.worker_id;
        IF registry.state = 'conflict' THEN
            problem := format('the registry shows identity %s/%s held by another node, %s',
                              registry.datacenter_id, registry.worker_id, registry.conflict_host);
        ELSIF registry.state <> 'held' THEN
            problem := format('the registry has not confirmed its identity (state %s%s)',
                              registry.state, ': ' || registry.last_error);
        END IF;
    ELSE
        source := 'configured';
        datacenter_id := node.datacenter_id;
        worker_id := node.worker_id;
        IF node.worker_id IS NULL AND node.datacenter_id IS NULL THEN
            problem := 'snowflake.datacenter_id and snowflake.worker_id are not set';
        ELSIF node.worker_id IS NULL THEN
            problem := 'snowflake.worker_id is not set';
        ELSIF node.datacenter_id IS NULL THEN
            problem := 'snowflake.datacenter_id is not set';
        END IF;
    END IF;
END
$function$;

COMMENT ON FUNCTION snowflake_node_identity() IS
    'The identity under which this node issues IDs (configured, or leased from the registry), its layout, and why it issues none if so (needs SELECT on snowflake_status and snowflake_registry_status)';

CREATE FUNCTION snowflake_cluster_identities(
        OUT node text,
        OUT datacenter_id integer,
        OUT worker_id integer,
        OUT source text,
        OUT layout text,
        OUT system_identifier numeric,
        OUT problem text)
    RETURNS SETOF record
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    extension_schema name;
    probe text;
    answers text;
BEGIN
    SELECT extnamespace::regnamespace::name INTO extension_schema
      FROM pg_extension WHERE extname = 'snowflake';
    probe := format('SELECT row_to_json(i) FROM %I.snowflake_node_identity() i', extension_schema);
    IF to_regproc('pg_catalog.run_command_on_all_nodes') IS NULL THEN
        answers := format('SELECT %L AS node, true AS success, (%s)::text AS result', 'local', probe);
    ELSE
        -- Citus: every active primary node. The coordinator's nodeid is 0
        -- when it is not in pg_dist_node.
        answers := format($citus$
            SELECT coalesce(n.nodename || ':' || n.nodeport,
                            current_setting('citus.local_hostname') || ':' || current_setting('port')) AS node,
                   r.success, r.result
              FROM pg_catalog.run_command_on_all_nodes(%L) r
              LEFT JOIN pg_catalog.pg_dist_node n ON n.nodeid = r.nodeid
        $citus$, probe);
    END IF;
    RETURN QUERY EXECUTE format($query$
        WITH answers AS (%s),
        here AS (SELECT layout FROM %I.snowflake_node_identity()),
        nodes AS (
            SELECT node, (j->>'datacenter_id')::integer AS datacenter_id,
                   (j->>'worker_id')::integer AS worker_id, j->>'source' AS source,
                   j->>'layout' AS layout, (j->>'system_identifier')::numeric AS system_identifier,
                   coalesce(failure, j->>'problem') AS own_problem
              FROM (SELECT a.node,
                           CASE WHEN a.success THEN a.result::json END AS j,
                           CASE WHEN NOT a.success
                                THEN 'could not ask it: ' || regexp_replace(a.result, '\s*\n\s*', ' ', 'g') END AS failure
                      FROM answers a) parsed),
        issuing AS (SELECT * FROM nodes WHERE own_problem IS NULL AND source <> 'standby')
        SELECT n.node, n.datacenter_id, n.worker_id, n.source, n.layout, n.system_identifier,
               nullif(concat_ws('; ',
                   n.own_problem,
                   (SELECT 'issues IDs under the same identity as ' || string_agg(o.node, ', ' ORDER BY o.node)
                           || CASE WHEN bool_or(o.system_identifier = n.system_identifier)
                                   THEN ' (the same system identifier: a copy of its data directory)' ELSE '' END
                      FROM issuing o
                     WHERE n.own_problem IS NULL AND n.source <> 'standby' AND o.node <> n.node
                       AND o.datacenter_id = n.datacenter_id AND o.worker_id = n.worker_id),
                   CASE WHEN n.layout <> (SELECT layout FROM here)
                        THEN format('layout %%s differs from this node''s, %%s', n.layout, (SELECT layout FROM here)) END,
                   CASE WHEN n.source = 'configured' AND EXISTS (SELECT FROM nodes o WHERE o.source = 'registry')
                        THEN 'uses no registry, while other nodes lease their identities from one: nothing keeps a lease from taking its identity' END),
                 '')
          FROM nodes n ORDER BY n.node
        $query$, answers, extension_schema);
END
$function$;

COMMENT ON FUNCTION snowflake_cluster_identities() IS
    'The identity of every node of the Citus cluster (this node alone without Citus), with a problem for nodes that share one, have none, use another layout or stand outside the registry';
