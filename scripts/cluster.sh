# Throwaway PostgreSQL clusters for the tour and the SQL-level tests.
# Sourced, not run. PostgreSQL refuses to run as root, so clusters belong to
# the `postgres` OS user, in a scratch directory it owns, reached only through
# a Unix socket there.
#
#   cluster_start NAME PORT [postgresql.conf lines...]
#   cluster_psql NAME [psql arguments...]
#   cluster_stop NAME
#   cluster_log_tail NAME          the server log's last lines, for failures

# shellcheck source=scripts/postgresql.sh
[ -n "${PG_BIN:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/postgresql.sh"
SCRATCH=${SCRATCH:-$(mktemp -d /tmp/snowflake.XXXXXX)}
chown postgres: "$SCRATCH"
# -g: cluster.sh is sourced inside functions too (scripts/test.sh), where a
# plain declare would make the table local and clusters_cleanup would stop nothing.
declare -gA CLUSTER_PORT=()

# From /: the caller's directory (often /root) is not the postgres user's to enter.
as_postgres() { (cd / && runuser -u postgres -- "$@"); }

cluster_start() {
    local name=$1 port=$2
    shift 2
    local dir=$SCRATCH/$name
    as_postgres mkdir -p "$dir"
    as_postgres "$PG_BIN/initdb" -D "$dir/data" --auth=trust -U postgres --no-sync >/dev/null
    {
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$dir'"
        echo "port = $port"
        echo "fsync = on"
        printf '%s\n' "$@"
    } >>"$dir/data/postgresql.conf"
    CLUSTER_PORT[$name]=$port
    # CLUSTER_SERVER_ENV: NAME=VALUE words for the server's environment only
    # (the sanitize layer's UBSAN_OPTIONS).
    # shellcheck disable=SC2086  # words, split on purpose
    as_postgres env ${CLUSTER_SERVER_ENV:-} "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null \
        || { cluster_log_tail "$name"; return 1; }
}

cluster_psql() {
    local name=$1
    shift
    "$PG_BIN/psql" -X -h "$SCRATCH/$name" -p "${CLUSTER_PORT[$name]}" -U postgres "$@"
}

# libpq environment for tools that take no connection options (pg_regress, pg_prove).
cluster_env() {
    echo "PGHOST=$SCRATCH/$1 PGPORT=${CLUSTER_PORT[$1]} PGUSER=postgres"
}

# A fast shutdown, or an immediate one if that has not ended every process in
# 30 s (a server process that ignores SIGTERM must not keep a test waiting).
cluster_stop() {
    local dir=$SCRATCH/$1
    [ -f "$dir/data/postmaster.pid" ] || return 0
    as_postgres "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -t 30 -w stop >/dev/null 2>&1 ||
        as_postgres "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
}

cluster_log_tail() {
    echo "--- last lines of $SCRATCH/$1/server.log ---"
    tail -n 30 "$SCRATCH/$1/server.log" || true
}

clusters_cleanup() {
    local name
    for name in "${!CLUSTER_PORT[@]}"; do cluster_stop "$name"; done
    rm -rf "$SCRATCH"
}
