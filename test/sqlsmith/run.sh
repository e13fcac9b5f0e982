#!/usr/bin/env bash
# The sqlsmith layer (scripts/test.sh sqlsmith): random SQL against a server
# that preloads snowflake, and typed random-argument calls of every
# snowflake_* function. Any server crash (a "terminated by signal" in its
# log, a connection lost) fails it.
#
#  1. sqlsmith (Debian's) for SQLSMITH_SECONDS (120) or SQLSMITH_QUERIES
#     (20000) queries, whichever comes first, against schema.sql: tables
#     keyed by snowflake_nextval(), IDs as base32 text, layouts as text, a
#     table partitioned by snowflake_node_ops;
#  2. random_calls.py: RANDOM_CALLS (50) calls of each function with typed
#     random arguments, every preset layout among the layout arguments, on
#     the server as it is (Twitter's layout) and then restarted with each
#     preset as its own layout (snowflake.layout), with an identity that
#     layout holds.
#
# Run by scripts/test.sh, which installs sqlsmith and the extension first.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/cluster.sh
source scripts/cluster.sh
trap clusters_cleanup EXIT
export PATH="$PG_BIN:$PATH"
SQLSMITH_SECONDS=${SQLSMITH_SECONDS:-120}
SQLSMITH_QUERIES=${SQLSMITH_QUERIES:-20000}
RANDOM_CALLS=${RANDOM_CALLS:-50}
seed=${SQLSMITH_SEED:-$RANDOM}
status=0

cluster_start smith 54420 "shared_preload_libraries = 'snowflake'" \
    "snowflake.datacenter_id = 3" "snowflake.worker_id = 7" "include_if_exists = 'layout.conf'"
log=$SCRATCH/smith/server.log
cluster_psql smith -q -c "CREATE DATABASE smith"
cluster_psql smith -q -d smith -v ON_ERROR_STOP=1 -f test/sqlsmith/schema.sql

crashes() { grep -cE 'terminated by signal|was terminated by exception' "$log" || true; }

echo "sqlsmith: seed $seed, at most $SQLSMITH_QUERIES queries or ${SQLSMITH_SECONDS}s"
output=$SCRATCH/sqlsmith.out
# --verbose prints a character per query; its statistics go out at the end
# (also when the time-box interrupts it).
timeout --signal=INT "$SQLSMITH_SECONDS" sqlsmith --verbose --exclude-catalog --seed="$seed" \
    --max-queries="$SQLSMITH_QUERIES" \
    --target="host=$SCRATCH/smith port=${CLUSTER_PORT[smith]} dbname=smith user=postgres" \
    >"$output" 2>&1 || true
queries=$(grep -oE 'queries: [0-9]+' "$output" | tail -n 1 | grep -oE '[0-9]+' || true)
tail -n 25 "$output" | grep -vE '^[.eSCt]*$' | tail -n 15 || true
echo "sqlsmith: ${queries:-?} queries"
if [ "${queries:-0}" -lt 1 ]; then
    echo "sqlsmith: it ran no query" >&2
    tail -n 20 "$output"
    status=1
fi
if [ "$(crashes)" -ne 0 ]; then
    echo "sqlsmith: the server crashed:" >&2
    grep -B 5 -E 'terminated by signal|was terminated by exception' "$log" | head -n 40
    status=1
fi

# The server's layout: each preset in turn, with an identity it holds.
export PGHOST=$SCRATCH/smith PGPORT=${CLUSTER_PORT[smith]} PGUSER=postgres PGDATABASE=smith
calls_with_layout() {
    local label=$1
    python3 test/sqlsmith/random_calls.py --calls "$RANDOM_CALLS" --seed "$seed" --label "$label" || status=1
}
calls_with_layout "server layout default (twitter):"
# Each preset with the identity it holds: 1 in each node field it has, and
# unset (-1) a field it lacks, which the server refuses to have set.
mapfile -t presets < <(cluster_psql smith -At -d smith -c "
    SELECT name, (specification ~ 'datacenter:')::int, (specification ~ 'worker:')::int
      FROM snowflake_layouts()")
for line in "${presets[@]}"; do
    IFS='|' read -r preset datacenter_id worker_id <<<"$line"
    [ "$datacenter_id" = 1 ] || datacenter_id=-1
    [ "$worker_id" = 1 ] || worker_id=-1
    # In an included file, read at the restart: a running server checks an
    # identity against its current layout, and would refuse it. A preset
    # whose time has run out (baidu's, in 2024) starts too, with a WARNING,
    # and its calls that issue refuse (2200H).
    layout=$preset
    printf "snowflake.layout = '%s'\nsnowflake.datacenter_id = %s\nsnowflake.worker_id = %s\n" \
        "$layout" "$datacenter_id" "$worker_id" | as_postgres tee "$SCRATCH/smith/data/layout.conf" >/dev/null
    if ! as_postgres "$PG_BIN/pg_ctl" -D "$SCRATCH/smith/data" -l "$log" -m fast -w restart >/dev/null 2>&1; then
        cluster_log_tail smith
        exit 1
    fi
    calls_with_layout "server layout '$layout':"
done

if [ "$(crashes)" -ne 0 ]; then
    echo "random calls: the server crashed:" >&2
    grep -B 5 -E 'terminated by signal|was terminated by exception' "$log" | head -n 40
    status=1
fi
[ $status -eq 0 ] && echo "sqlsmith: no crash (server log $log: 0 'terminated by signal')"
exit $status
