#!/usr/bin/env bash
# The monitoring layer (scripts/test.sh monitoring): Debian's
# prometheus-postgres-exporter, run with contrib/monitoring/queries.yaml
# against a real server that preloads snowflake and holds a registry lease,
# scraped over HTTP; every column of snowflake_status,
# snowflake_backend_status and snowflake_registry_status is checked against
# the scraped metric (or label) that carries it. Then promtool (Debian's
# prometheus) checks contrib/monitoring/alerts.yaml and runs its unit tests,
# test/monitoring/alerts_test.yaml. Run by scripts/test.sh, which has
# installed the extension and the packages (scripts/install-deps.sh
# --monitoring).
#
# It runs in a network namespace of its own: the exporter listens on its
# loopback, the server on a Unix socket only.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ -z "${SNOWFLAKE_MONITORING_NETNS:-}" ]; then
    exec unshare --net -- env SNOWFLAKE_MONITORING_NETNS=1 "$0" "$@"
fi
ip link set lo up

# shellcheck source=scripts/cluster.sh
source scripts/cluster.sh
exporter_pid=''
session_pid=''
cleanup() {
    [ -z "$exporter_pid" ] || kill "$exporter_pid" 2>/dev/null || true
    [ -z "$session_pid" ] || kill "$session_pid" 2>/dev/null || true
    clusters_cleanup
}
trap cleanup EXIT

failed=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; failed=$((failed + 1)); }

# The node leases its identity from a registry: its own server's database.
socket=$SCRATCH/monitoring
cluster_start monitoring 5432 "shared_preload_libraries = 'snowflake'" \
    "snowflake.datacenter_id = 3" "snowflake.worker_id = 7" \
    "snowflake.registry = 'host=$socket port=5432 user=postgres dbname=registry'"
cluster_psql monitoring -q -c "CREATE DATABASE registry" -c "CREATE DATABASE app"
cluster_psql monitoring -q -d app -c "CREATE EXTENSION snowflake"
psql_app() { cluster_psql monitoring -d app -Atq "$@"; }
for _ in $(seq 1 100); do
    [ "$(psql_app -c "SELECT state FROM snowflake_registry_status")" = held ] && break
    sleep 0.2
done
# IDs issued, and a backend that issued some and stays.
psql_app -c "SELECT count(snowflake_nextval()) FROM generate_series(1, 1000)" >/dev/null
cluster_psql monitoring -d app -Atq -c "SELECT count(snowflake_nextval()) FROM generate_series(1, 500)" \
    -c "SELECT pg_sleep(600)" >/dev/null 2>&1 &
session_pid=$!
for _ in $(seq 1 100); do
    [ "$(psql_app -c "SELECT count(*) FROM snowflake_backend_status WHERE ids_issued = 500")" = 1 ] && break
    sleep 0.2
done

# --- the exporter -----------------------------------------------------------
mkdir -p build/monitoring
exporter=/usr/bin/prometheus-postgres-exporter
"$exporter" --version 2>&1 | head -n 1
DATA_SOURCE_NAME="host=$socket port=5432 user=postgres dbname=app sslmode=disable" \
    "$exporter" --web.listen-address=127.0.0.1:9187 \
    --extend.query-path=contrib/monitoring/queries.yaml \
    --disable-default-metrics --disable-settings-metrics >build/monitoring/exporter.log 2>&1 &
exporter_pid=$!

# GET /metrics over bash's /dev/tcp (no HTTP client needed).
scrape() {
    local reply
    exec 3<>/dev/tcp/127.0.0.1/9187 || return 1
    printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
    reply=$(cat <&3)
    exec 3<&-
    printf '%s\n' "$reply" | tr -d '\r' | sed '1,/^$/d'
}
metrics=
for _ in $(seq 1 50); do
    metrics=$(scrape 2>/dev/null) && [[ "$metrics" == *snowflake_status_ids_issued* ]] && break
    sleep 0.2
done
printf '%s\n' "$metrics" >build/monitoring/metrics.txt
if [[ "$metrics" != *snowflake_status_ids_issued* ]]; then
    not_ok "the exporter serves snowflake's metrics (build/monitoring/exporter.log):"
    cat build/monitoring/exporter.log
    exit 1
fi
ok "the exporter serves snowflake's metrics"

# The value of metric $1 in the scrape, on the series whose labels include $2
# (a label="value" pair; the first series if empty).
scraped() {
    printf '%s\n' "$metrics" | grep -F "$1{" | grep -F -- "${2:-}" | grep "^$1{" | head -n 1 | awk '{print $NF}' || true
}
# The value of label $2 on metric family $1's first series ("" if absent).
scraped_label() {
    printf '%s\n' "$metrics" | grep "^$1_[a-z_]*{" | head -n 1 | sed -n "s/.*[{,]$2=\"\\([^\"]*\\)\".*/\\1/p" || true
}
# Whether $1 and $2 are the same number, within $3 (default 0.001).
same_number() { awk -v a="$1" -v b="$2" -v within="${3:-0.001}" 'BEGIN {
    if (a == "NaN" || b == "NaN") exit !(a == b)
    d = a - b; if (d < 0) d = -d; exit !(d <= within) }'; }

# Each column of a view against the scrape: a timestamptz is a metric named
# without "_at", with "_seconds" (epoch seconds, NaN for NULL); an interval a
# metric of its name with "_seconds" (it moves with the clock: the same within
# 5 s); a number or a boolean a metric of its name; a text, or a number PromQL
# cannot hold exactly, a label. The view is read in one query right after a
# scrape.
check_view() {
    local view=$1 prefix=$2 where=$3 selector=$4 entry column type expected value i within
    local columns=() reads=() row values=()
    mapfile -t columns < <(psql_app -F '|' -c "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
                                               WHERE attrelid = '$view'::regclass AND attnum > 0 ORDER BY attnum")
    for entry in "${columns[@]}"; do
        column=${entry%%|*} type=${entry#*|}
        case $type in
            "timestamp with time zone" | interval) reads+=("coalesce(extract(epoch FROM $column)::text, 'NaN')") ;;
            boolean) reads+=("coalesce($column::int::text, 'NaN')") ;;
            integer | bigint) reads+=("coalesce($column::text, 'NaN')") ;;
            *) reads+=("coalesce($column::text, '')") ;;
        esac
    done
    metrics=$(scrape)
    row=$(IFS=,; psql_app -F $'\x1f' -c "SELECT ${reads[*]}, 'end' FROM $view $where")
    IFS=$'\x1f' read -r -a values <<<"$row"
    for i in "${!columns[@]}"; do
        column=${columns[i]%%|*} type=${columns[i]#*|} expected=${values[i]}
        case $type in
            "timestamp with time zone") value=$(scraped "${prefix}_${column%_at}_seconds" "$selector") ;;
            interval) value=$(scraped "${prefix}_${column}_seconds" "$selector") ;;
            integer | bigint | boolean) value=$(scraped "${prefix}_$column" "$selector") ;;
            *) value= ;;
        esac
        within=0.001
        [ "$type" != interval ] || within=5
        if [ -n "$value" ]; then
            if same_number "$value" "$expected" "$within"; then
                ok "$view.$column: $value"
            else
                not_ok "$view.$column is $expected, the metric $value"
            fi
        elif ! grep -qE "^${prefix}_[a-z_]+\{(.*,)?$column=\"" <<<"$metrics"; then
            # Not a metric: a label, on every series of the view's metrics.
            if [ -z "$expected" ]; then
                ok "$view.$column: empty, and no label (Prometheus drops empty labels)"
            else
                not_ok "$view.$column ($type): no metric and no label"
            fi
        elif [ "$(scraped_label "$prefix" "$column")" = "$expected" ]; then
            ok "$view.$column: the label $column=\"$expected\""
        else
            not_ok "$view.$column is '$expected', the label '$(scraped_label "$prefix" "$column")'"
        fi
    done
}

pid=$(psql_app -c "SELECT pid FROM snowflake_backend_status WHERE ids_issued = 500")
check_view snowflake_status snowflake_status "" ""
check_view snowflake_backend_status snowflake_backend "WHERE pid = $pid" "pid=\"$pid\""
# The lease's times move at each renewal (every third of the lease): a renewal
# between the scrape and the query is scraped again, up to three times.
before=$failed
for attempt in 1 2 3; do
    failed=$before
    check_view snowflake_registry_status snowflake_registry "" "" >build/monitoring/registry.log
    if [ "$failed" -eq "$before" ] || [ "$attempt" -eq 3 ]; then break; fi
    echo "# a renewal between the scrape and the query: again"
done
cat build/monitoring/registry.log
state=$(psql_app -c "SELECT state FROM snowflake_registry_status")
if [ "$state" = held ]; then ok "the registry lease is held"; else not_ok "the registry state is $state, not held"; fi

# Every metric the alert rules use is one the exporter serves. (grep -q reads
# a here-string, not a pipe: it stops at the first match, and under pipefail
# the writer's SIGPIPE on a scrape larger than one write would fail the test.)
grep -oE 'snowflake_(status|backend|registry)_[a-z_]+' contrib/monitoring/alerts.yaml | sort -u >build/monitoring/alert-metrics.txt
while read -r metric; do
    if grep -q "^$metric{" <<<"$metrics"; then
        ok "alerts.yaml's $metric is served"
    else
        not_ok "alerts.yaml uses $metric, which the exporter does not serve"
    fi
done <build/monitoring/alert-metrics.txt

# --- the alert rules --------------------------------------------------------
promtool --version 2>&1 | head -n 1
if promtool check rules contrib/monitoring/alerts.yaml; then ok "promtool check rules"; else not_ok "promtool check rules"; fi
if promtool test rules test/monitoring/alerts_test.yaml; then ok "promtool test rules"; else not_ok "promtool test rules"; fi

echo "monitoring: $failed failed"
[ "$failed" -eq 0 ]
