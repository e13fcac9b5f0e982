// The SQL the registry worker runs against the registry table ({table} is its
// schema-qualified name, client.cpp's with_table). No PostgreSQL header: the
// differential test (test/simulation/) runs the same text in a real
// PostgreSQL against the pure version in src/core/registry_row.hpp. The rules
// the statements carry are stated in claim.cpp.
#pragma once

namespace snowflake::pg::registry {

// Every statement runs with the session's search_path pinned to pg_catalog
// (client.cpp), and each operator in it has an exact match in pg_catalog for
// its argument types (numeric * numeric, float8 * interval, ...): an operator
// planted in a schema of the path for a pair pg_catalog would only reach by
// an implicit cast is never chosen, whatever the path.

// The registry table; doc/registry.md shows the same statement, and
// test/t/057_registry_search_path.pl checks that the two tables agree.
// token and released came with 1.7 (client.cpp adds them to an older table).
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
    "    token                bigint      NOT NULL DEFAULT 0,\n"
    "    released             boolean     NOT NULL DEFAULT false,\n"
    "    PRIMARY KEY (datacenter_id, worker_id)\n"
    ")";

// The columns 1.7 added, for a table created by 1.6 or earlier.
constexpr char kAddColumns[] =
    "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS token bigint NOT NULL DEFAULT 0, "
    "ADD COLUMN IF NOT EXISTS released boolean NOT NULL DEFAULT false";

// One statement claims or renews (datacenter_id, worker_id), or reports who
// holds it. The conditions are those in claim.cpp's header
// (src/core/registry_row.hpp is their pure version). The same holder
// (same system identifier, timeline, host, data directory and token: the
// same running postmaster) renewing keeps the row's inherited_ids_before, and
// its ids_before never goes down: a renewal that reaches the registry late,
// after a later one the node sent when it gave up on the first, lowers
// nothing (the node returns IDs up to the later one's). A successor (the same
// system identifier on a later timeline, or on the same timeline, host and
// data directory with another token) takes the row only when it is released,
// stale (not renewed for two thirds of its lease) or expired; anyone else
// only when it is expired. Every claimant but the same holder gets the
// largest ids_before of the holders before it. `previous` (the row as it
// was: the CTEs share one snapshot) names the node a takeover was taken
// from, and says whether the row existed and when it was renewed last; with
// the OID of the table ($12, its name) and the registry's clock, what the
// node compares with what it saw before (src/core/registry_history.hpp: a row gone or older,
// another table, is a change of the registry's history).
constexpr char kClaim[] =
    "WITH previous AS (\n"
    "  SELECT host, system_identifier = $3::numeric AND timeline = $4::bigint\n"
    "      AND host = $5::text AND data_directory = $6::text AND token = $11::bigint\n"
    "      AS same_holder, renewed_at\n"
    "    FROM {table} WHERE datacenter_id = $1::integer AND worker_id = $2::integer),\n"
    "claim AS (\n"
    "  INSERT INTO {table} AS r (datacenter_id, worker_id, system_identifier,\n"
    "      timeline, host, data_directory, cluster_name, claimed_at, renewed_at, expires_at,\n"
    "      ids_before, token, released)\n"
    "  VALUES ($1::integer, $2::integer, $3::numeric, $4::bigint, $5::text, $6::text, $7::text,\n"
    "      now(), now(), now() + $8::float8 * interval '1 millisecond',\n"
    "      timestamptz 'epoch' + $9::float8 * interval '1 millisecond', $11::bigint, false)\n"
    "  ON CONFLICT (datacenter_id, worker_id) DO UPDATE SET\n"
    "    claimed_at = CASE WHEN r.expires_at >= now()\n"
    "                       AND r.system_identifier = excluded.system_identifier\n"
    "                       AND r.timeline = excluded.timeline\n"
    "                       AND r.host = excluded.host\n"
    "                       AND r.data_directory = excluded.data_directory\n"
    "                       AND r.token = excluded.token\n"
    "                      THEN r.claimed_at ELSE now() END,\n"
    "    inherited_ids_before = CASE WHEN r.system_identifier = excluded.system_identifier\n"
    "                                 AND r.timeline = excluded.timeline\n"
    "                                 AND r.host = excluded.host\n"
    "                                 AND r.data_directory = excluded.data_directory\n"
    "                                 AND r.token = excluded.token\n"
    "                                THEN r.inherited_ids_before\n"
    "                                ELSE greatest(r.ids_before, r.inherited_ids_before) END,\n"
    "    system_identifier = excluded.system_identifier, timeline = excluded.timeline,\n"
    "    host = excluded.host, data_directory = excluded.data_directory,\n"
    "    cluster_name = excluded.cluster_name, renewed_at = now(),\n"
    "    expires_at = excluded.expires_at, token = excluded.token, released = false,\n"
    "    ids_before = greatest(excluded.ids_before,\n"
    "        CASE WHEN r.system_identifier = excluded.system_identifier\n"
    "              AND r.timeline = excluded.timeline\n"
    "              AND r.host = excluded.host\n"
    "              AND r.data_directory = excluded.data_directory\n"
    "              AND r.token = excluded.token\n"
    "             THEN r.ids_before END,\n"
    "        CASE WHEN r.system_identifier = excluded.system_identifier\n"
    "              AND r.timeline = excluded.timeline\n"
    "              AND r.host = excluded.host\n"
    "              AND r.data_directory = excluded.data_directory\n"
    "              AND r.token = excluded.token\n"
    "             THEN r.inherited_ids_before\n"
    "             ELSE greatest(r.ids_before, r.inherited_ids_before) END\n"
    "          + $10::float8 * interval '1 millisecond')\n"
    "  WHERE r.expires_at < now()\n"
    "     OR (r.system_identifier = excluded.system_identifier\n"
    "         AND r.timeline = excluded.timeline AND r.host = excluded.host\n"
    "         AND r.data_directory = excluded.data_directory AND r.token = excluded.token)\n"
    "     OR (r.system_identifier = excluded.system_identifier\n"
    "         AND (r.timeline < excluded.timeline\n"
    "              OR (r.timeline = excluded.timeline AND r.host = excluded.host\n"
    "                  AND r.data_directory = excluded.data_directory))\n"
    "         AND (r.released\n"
    "              OR CASE WHEN isfinite(r.renewed_at) AND isfinite(r.expires_at)\n"
    "                   THEN (now() - r.renewed_at) * 3::float8\n"
    "                          > (r.expires_at - r.renewed_at) * 2::float8\n"
    "                   ELSE false END))\n"
    "  RETURNING *)\n"
    "SELECT claimed, system_identifier::text, timeline, host, data_directory,\n"
    "    CASE WHEN isfinite(claimed_at)\n"
    "      THEN (extract(epoch FROM claimed_at)::numeric * 1000000::numeric)::bigint END,\n"
    "    CASE WHEN isfinite(renewed_at)\n"
    "      THEN (extract(epoch FROM renewed_at)::numeric * 1000000::numeric)::bigint END,\n"
    "    CASE WHEN isfinite(expires_at)\n"
    "      THEN (extract(epoch FROM expires_at)::numeric * 1000000::numeric)::bigint END,\n"
    "    CASE WHEN claimed AND inherited_ids_before IS NOT NULL THEN floor(extract(epoch FROM\n"
    "      least(inherited_ids_before, timestamptz '100000-01-01'))::numeric\n"
    "        * 1000::numeric)::bigint END,\n"
    "    CASE WHEN claimed THEN (SELECT host FROM previous WHERE NOT same_holder) END,\n"
    "    CASE WHEN claimed THEN floor(extract(epoch FROM\n"
    "      least(ids_before, timestamptz '100000-01-01'))::numeric * 1000::numeric)::bigint END,\n"
    "    $12::regclass::oid::bigint, EXISTS (SELECT FROM previous),\n"
    "    (SELECT CASE WHEN isfinite(renewed_at) THEN (extract(epoch FROM renewed_at)::numeric\n"
    "       * 1000000::numeric)::bigint END FROM previous),\n"
    "    (extract(epoch FROM now())::numeric * 1000000::numeric)::bigint\n"
    "  FROM (SELECT true AS claimed, * FROM claim\n"
    "        UNION ALL\n"
    "        SELECT false, * FROM {table}\n"
    "          WHERE datacenter_id = $1::integer AND worker_id = $2::integer\n"
    "            AND NOT EXISTS (SELECT FROM claim)) AS answer";

// Automatic leasing's view of the range: every row, with whether it is live
// (its lease not expired), released, and stale, as kClaim decides them.
constexpr char kPick[] =
    "SELECT datacenter_id, worker_id, system_identifier::text, timeline, host, data_directory,\n"
    "    expires_at >= now(), token, released,\n"
    "    CASE WHEN isfinite(renewed_at) AND isfinite(expires_at)\n"
    "      THEN (now() - renewed_at) * 3::float8 > (expires_at - renewed_at) * 2::float8\n"
    "      ELSE false END\n"
    "  FROM {table}\n"
    "  WHERE datacenter_id BETWEEN $1::integer AND $2::integer\n"
    "    AND worker_id BETWEEN 0 AND $3::integer\n"
    "  ORDER BY datacenter_id, worker_id";

// At shutdown: the row promises only the IDs this node actually issued, and
// is marked released, so that a standby promoted in a planned switchover, or
// this node restarted (a new postmaster, a new token), takes it at once. For
// everyone else the lease itself runs on. Only over the renewal the node last
// saw accepted ($8, renewed_at in microseconds as kClaim returns it) and only
// by the same postmaster ($9, its token): a release that reaches the
// registry late, after this node restarted and claimed again with a higher
// ids_before, changes nothing.
constexpr char kRelease[] =
    "UPDATE {table}\n"
    "  SET ids_before = timestamptz 'epoch' + $7::float8 * interval '1 millisecond',\n"
    "      released = true\n"
    "  WHERE datacenter_id = $1::integer AND worker_id = $2::integer\n"
    "    AND system_identifier = $3::numeric AND timeline = $4::bigint\n"
    "    AND host = $5::text AND data_directory = $6::text AND token = $9::bigint\n"
    "    AND (extract(epoch FROM renewed_at)::numeric * 1000000::numeric)::bigint = $8::bigint";

}  // namespace snowflake::pg::registry
