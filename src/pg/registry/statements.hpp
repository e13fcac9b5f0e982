// The SQL the registry worker runs against the registry table ({table} is its
// schema-qualified name, client.cpp's with_table). No PostgreSQL header: the
// differential test (test/simulation/) runs the same text in a real
// PostgreSQL against the pure version in src/core/registry_row.hpp. The rules
// the statements carry are stated in claim.cpp.
#pragma once

namespace snowflake::pg::registry {

// The registry table; doc/registry.md shows the same statement, and
// test/t/057_registry_search_path.pl checks that the two tables agree.
constexpr char kCreateTable[] =
    "CREATE TABLE IF NOT EXISTS {table} (\n"
    "    datacenter_id        integer     NOT NULL,\n"
    "    worker_id            integer     NOT NULL,\n"
    "    system_identifier    numeric(20) NOT NULL,\n"
    "    timeline             bigint      NOT NULL,\n"
    "    host                 text        NOT NULL,\n"
    "    data_directory       text        NOT NULL,\n"
    "    cluster_name         text        NOT NULL,\n"
    "    claimed_at           timestamptz NOT NULL,\n"
    "    renewed_at           timestamptz NOT NULL,\n"
    "    expires_at           timestamptz NOT NULL,\n"
    "    ids_before           timestamptz NOT NULL,\n"
    "    inherited_ids_before timestamptz,\n"
    "    PRIMARY KEY (datacenter_id, worker_id)\n"
    ")";

// One statement claims or renews (datacenter_id, worker_id), or reports who
// holds it. The conditions are those in claim.cpp's header. The same holder
// renewing (same system identifier, timeline, host and data directory) keeps
// the row's inherited_ids_before, and its ids_before never goes down: a
// renewal that reaches the registry late, after a later one the node sent
// when it gave up on the first, lowers nothing (the node returns IDs up to
// the later one's). Every other claimant gets the largest ids_before of the
// holders before it. `previous` (the row as it was: the CTEs
// share one snapshot) names the node a takeover was taken from.
constexpr char kClaim[] =
    "WITH previous AS (\n"
    "  SELECT host, system_identifier = $3::numeric AND timeline = $4::bigint\n"
    "      AND host = $5::text AND data_directory = $6::text AS same_holder\n"
    "    FROM {table} WHERE datacenter_id = $1::integer AND worker_id = $2::integer),\n"
    "claim AS (\n"
    "  INSERT INTO {table} AS r (datacenter_id, worker_id, system_identifier,\n"
    "      timeline, host, data_directory, cluster_name, claimed_at, renewed_at, expires_at,\n"
    "      ids_before)\n"
    "  VALUES ($1::integer, $2::integer, $3::numeric, $4::bigint, $5::text, $6::text, $7::text,\n"
    "      now(), now(), now() + $8::integer * interval '1 millisecond',\n"
    "      timestamptz 'epoch' + $9::bigint * interval '1 millisecond')\n"
    "  ON CONFLICT (datacenter_id, worker_id) DO UPDATE SET\n"
    "    claimed_at = CASE WHEN r.expires_at >= now()\n"
    "                       AND r.system_identifier = excluded.system_identifier\n"
    "                       AND r.timeline = excluded.timeline\n"
    "                       AND r.host = excluded.host\n"
    "                       AND r.data_directory = excluded.data_directory\n"
    "                      THEN r.claimed_at ELSE now() END,\n"
    "    inherited_ids_before = CASE WHEN r.system_identifier = excluded.system_identifier\n"
    "                                 AND r.timeline = excluded.timeline\n"
    "                                 AND r.host = excluded.host\n"
    "                                 AND r.data_directory = excluded.data_directory\n"
    "                                THEN r.inherited_ids_before\n"
    "                                ELSE greatest(r.ids_before, r.inherited_ids_before) END,\n"
    "    system_identifier = excluded.system_identifier, timeline = excluded.timeline,\n"
    "    host = excluded.host, data_directory = excluded.data_directory,\n"
    "    cluster_name = excluded.cluster_name, renewed_at = now(),\n"
    "    expires_at = excluded.expires_at,\n"
    "    ids_before = greatest(excluded.ids_before,\n"
    "        CASE WHEN r.system_identifier = excluded.system_identifier\n"
    "              AND r.timeline = excluded.timeline\n"
    "              AND r.host = excluded.host\n"
    "              AND r.data_directory = excluded.data_directory\n"
    "             THEN r.ids_before END,\n"
    "        CASE WHEN r.system_identifier = excluded.system_identifier\n"
    "              AND r.timeline = excluded.timeline\n"
    "              AND r.host = excluded.host\n"
    "              AND r.data_directory = excluded.data_directory\n"
    "             THEN r.inherited_ids_before\n"
    "             ELSE greatest(r.ids_before, r.inherited_ids_before) END\n"
    "          + $10::bigint * interval '1 millisecond')\n"
    "  WHERE r.expires_at < now()\n"
    "     OR (r.system_identifier = excluded.system_identifier\n"
    "         AND (r.timeline < excluded.timeline\n"
    "              OR (r.timeline = excluded.timeline AND r.host = excluded.host\n"
    "                  AND r.data_directory = excluded.data_directory)))\n"
    "  RETURNING *)\n"
    "SELECT claimed, system_identifier::text, timeline, host, data_directory,\n"
    "    CASE WHEN isfinite(claimed_at)\n"
    "      THEN (extract(epoch FROM claimed_at) * 1000000)::bigint END,\n"
    "    CASE WHEN isfinite(renewed_at)\n"
    "      THEN (extract(epoch FROM renewed_at) * 1000000)::bigint END,\n"
    "    CASE WHEN isfinite(expires_at)\n"
    "      THEN (extract(epoch FROM expires_at) * 1000000)::bigint END,\n"
    "    CASE WHEN claimed AND inherited_ids_before IS NOT NULL THEN floor(extract(epoch FROM\n"
    "      least(inherited_ids_before, timestamptz '100000-01-01')) * 1000)::bigint END,\n"
    "    CASE WHEN claimed THEN (SELECT host FROM previous WHERE NOT same_holder) END,\n"
    "    CASE WHEN claimed THEN floor(extract(epoch FROM\n"
    "      least(ids_before, timestamptz '100000-01-01')) * 1000)::bigint END\n"
    "  FROM (SELECT true AS claimed, * FROM claim\n"
    "        UNION ALL\n"
    "        SELECT false, * FROM {table}\n"
    "          WHERE datacenter_id = $1::integer AND worker_id = $2::integer\n"
    "            AND NOT EXISTS (SELECT FROM claim)) AS answer";

// At shutdown: the row promises only the IDs this node actually issued, so
// that a standby promoted in a planned switchover starts at once. The lease
// itself runs on: the node gets its identity back if it restarts within it.
// Only over the renewal the node last saw accepted ($8, renewed_at in
// microseconds as kClaim returns it): a release that reaches the registry
// late, after this node restarted and claimed again with a higher
// ids_before, changes nothing.
constexpr char kRelease[] =
    "UPDATE {table}\n"
    "  SET ids_before = timestamptz 'epoch' + $7::bigint * interval '1 millisecond'\n"
    "  WHERE datacenter_id = $1::integer AND worker_id = $2::integer\n"
    "    AND system_identifier = $3::numeric AND timeline = $4::bigint\n"
    "    AND host = $5::text AND data_directory = $6::text\n"
    "    AND (extract(epoch FROM renewed_at) * 1000000)::bigint = $8::bigint";

}  // namespace snowflake::pg::registry
