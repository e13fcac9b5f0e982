#!/usr/bin/env bash
# The five-minute tour: installs what is missing, builds and installs the
# extension, starts a throwaway cluster (as the postgres user, Unix socket
# only) configured as datacenter 3, worker 7, and issues and decodes IDs.
#
#   scripts/tour.sh          run the tour, then remove the cluster
#   scripts/tour.sh --keep   leave the cluster running and say how to connect
#   PG_CONFIG=/usr/lib/postgresql/NN/bin/pg_config scripts/tour.sh
#                            on that PostgreSQL (or PG_MAJOR=NN); by default the
#                            Debian release's, and on a release the scripts do
#                            not name, the one major installed
#
# For a machine you cannot spare, that runs PostgreSQL already: scripts/install.sh
# (doc/install.md), which installs no server and touches one cluster only.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/tour.sh runs as root: it installs packages and runs a server as the postgres user." >&2
    exit 1
fi
keep=false
[ "${1:-}" = "--keep" ] && keep=true

# shellcheck source=scripts/postgresql.sh
source scripts/postgresql.sh  # PG_MAJOR, PG_CONFIG (make reads it), PG_BIN
scripts/install-deps.sh --runtime
make -s -j "$(nproc)"
make -s install >/dev/null

# shellcheck source=scripts/cluster.sh
source scripts/cluster.sh
$keep || trap clusters_cleanup EXIT
cluster_start tour 54432 \
    "shared_preload_libraries = 'snowflake'" \
    "snowflake.datacenter_id = 3" \
    "snowflake.worker_id = 7"

cluster_psql tour -v ON_ERROR_STOP=1 --echo-queries <<'SQL'
\pset footer off
SET timezone = 'UTC';
CREATE EXTENSION snowflake;

-- A table keyed by snowflake IDs: unique across nodes, ordered by time.
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
INSERT INTO orders (item) VALUES ('book'), ('pen'), ('lamp')
    RETURNING id, (snowflake_decode(id)).*;

-- When, where and in which order each row was created, from the key alone.
SELECT id, snowflake_timestamp(id) AS created, snowflake_to_base32(id) AS for_urls FROM orders;

-- "Rows created in the last minute", answered by the primary key index.
SELECT count(*) FROM orders
 WHERE id BETWEEN snowflake_min_id(now() - interval '1 minute') AND snowflake_max_id(now());

-- A million IDs, all distinct and increasing.
SELECT count(DISTINCT id) AS distinct_ids, min(id) < max(id) AS increasing
  FROM snowflake_generate(1000000) AS id;

-- The node at a glance.
\x on
SELECT * FROM snowflake_status;
SQL

if $keep; then
    echo
    echo "The cluster keeps running. Connect with:"
    echo "  $PG_BIN/psql -h $SCRATCH/tour -p 54432 -U postgres"
    echo "Stop it with:"
    echo "  runuser -u postgres -- $PG_BIN/pg_ctl -D $SCRATCH/tour/data stop"
fi
