#!/usr/bin/env bash
# Installs snowflake into the PostgreSQL this machine runs (doc/install.md):
# finds it and names it, installs what building for that PostgreSQL needs
# (never a second server), builds with its pg_config, installs, installs the
# pg_upgradecluster hook where Debian's postgresql-common is, and, asked to,
# configures that one cluster and restarts it alone. As root, in a clone.
#
#   scripts/install.sh                        the one PostgreSQL installed; with
#                                             several clusters or majors, lists
#                                             them and asks for one of:
#   scripts/install.sh --cluster 17/main      that cluster (pg_lsclusters)
#   PG_CONFIG=/path/to/pg_config scripts/install.sh
#                                             that PostgreSQL (any layout; on
#                                             Debian and Ubuntu also picks its
#                                             one cluster, if it has one)
#   ... --configure --datacenter-id 3 --worker-id 7
#                                             also adds snowflake to that
#                                             cluster's shared_preload_libraries
#                                             (keeping what it lists), sets the
#                                             two identity settings, and restarts
#                                             that cluster only (pg_ctlcluster);
#                                             without --configure, prints the
#                                             lines and the command instead
#   ... --no-upgrade-hook                     leaves out the pg_upgradecluster
#                                             hook (make install-upgrade-hook
#                                             installs it later)
#
# Idempotent: a second run installs nothing, builds nothing new, changes no
# setting and restarts nothing, and says so. It never changes an identity a
# cluster has already (another snowflake.worker_id): that is the operator's
# decision (README, "Choosing node identities"). Where no PostgreSQL is
# installed at all, on a Debian release the scripts know it installs that
# release's (as scripts/tour.sh does); elsewhere it says what to install.
set -Eeuo pipefail
# shellcheck disable=SC2154  # err_status is set by the trap itself
trap 'err_status=$?; [ "$BASHPID" != "$$" ] || echo "scripts/install.sh: line $LINENO: $BASH_COMMAND failed (status $err_status)" >&2' ERR
cd "$(dirname "$0")/.."

say() { printf '==> %s\n' "$*"; }
fail() {
    printf 'scripts/install.sh: %s\n' "$1" >&2
    shift
    [ $# -eq 0 ] || printf '%s\n' "$@" >&2
    exit 1
}
usage() {
    sed -n '/^#   scripts\/install.sh  /,/^# Idempotent/p' "$0" | sed '$d; s/^#//' >&2
    exit 2
}

arguments=("$@")
cluster='' configure=false datacenter_id='' worker_id='' upgrade_hook=true
while [ $# -gt 0 ]; do
    case $1 in
        --cluster) cluster=${2:-}; shift ;;
        --configure) configure=true ;;
        --datacenter-id) datacenter_id=${2:-}; shift ;;
        --worker-id) worker_id=${2:-}; shift ;;
        --no-upgrade-hook) upgrade_hook=false ;;
        -h | --help) usage ;;
        *) echo "scripts/install.sh: unknown argument '$1'" >&2; usage ;;
    esac
    shift
done
for id in "$datacenter_id" "$worker_id"; do
    [ -z "$id" ] || [[ $id =~ ^[0-9]+$ && $id -le 31 ]] ||
        fail "an identity is a number from 0 to 31, not '$id'"
done
if $configure && { [ -z "$datacenter_id" ] || [ -z "$worker_id" ]; }; then
    fail "--configure needs --datacenter-id N and --worker-id N (0-31 each; no other node may share the pair)"
fi
if [ "$(id -u)" -ne 0 ]; then
    fail "runs as root (sudo scripts/install.sh ...): it installs packages and files into PostgreSQL's directories."
fi

# The detection of scripts/postgresql.sh, without its choice (made below).
POSTGRESQL_FUNCTIONS_ONLY=1
# shellcheck source=scripts/postgresql.sh
source scripts/postgresql.sh
PG_CONFIG=${PG_CONFIG:-}
major_of() { "$1" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p'; }

# --- which PostgreSQL --------------------------------------------------------
# The cluster chosen: its major, name, port, status, owner, data directory.
c_major='' c_name='' c_port='' c_status='' c_owner='' c_data=''
choose_cluster() {  # choose_cluster "MAJOR NAME PORT STATUS OWNER DATA"
    read -r c_major c_name c_port c_status c_owner c_data <<<"$1"
}
mapfile -t clusters < <(postgresql_clusters)

list_postgresql() {
    local line major
    for line in "${clusters[@]}"; do
        read -r major name port status _ data <<<"$line"
        printf '  --cluster %-12s PostgreSQL %s, port %s, %s, %s\n' "$major/$name" "$major" "$port" "$status" "$data"
    done
    for major in $(postgresql_installed_majors); do
        printf '%s\n' "${clusters[@]}" | grep -q "^$major " ||
            printf '  PG_CONFIG=%-36s PostgreSQL %s, installed, no cluster\n' "/usr/lib/postgresql/$major/bin/pg_config" "$major"
    done
}

if [ -n "$cluster" ]; then
    [ ${#clusters[@]} -gt 0 ] || fail "--cluster $cluster: no cluster here (pg_lsclusters lists none)"
    [[ $cluster =~ ^([0-9]+)/([^/ ]+)$ ]] || fail "--cluster takes MAJOR/NAME (17/main), not '$cluster'"
    line=$(printf '%s\n' "${clusters[@]}" | awk -v m="${BASH_REMATCH[1]}" -v n="${BASH_REMATCH[2]}" '$1 == m && $2 == n')
    [ -n "$line" ] || fail "there is no cluster $cluster here; the clusters are:" "$(list_postgresql)"
    choose_cluster "$line"
    if [ -n "$PG_CONFIG" ] && [ "$(major_of "$PG_CONFIG" 2>/dev/null)" != "$c_major" ]; then
        fail "PG_CONFIG=$PG_CONFIG is not PostgreSQL $c_major, the major of cluster $cluster: name one of them"
    fi
    PG_CONFIG=/usr/lib/postgresql/$c_major/bin/pg_config
    why="the cluster named (--cluster $cluster)"
elif [ -n "$PG_CONFIG" ]; then
    [ -x "$PG_CONFIG" ] || fail "PG_CONFIG=$PG_CONFIG is not an executable pg_config"
    why="the PostgreSQL named (PG_CONFIG=$PG_CONFIG)"
    PG_MAJOR=$(major_of "$PG_CONFIG")
    # Its cluster, where postgresql-common names exactly one of its major.
    if [[ $PG_CONFIG == /usr/lib/postgresql/$PG_MAJOR/bin/pg_config ]]; then
        mapfile -t own < <(printf '%s\n' "${clusters[@]}" | awk -v m="$PG_MAJOR" '$1 == m')
        if [ ${#own[@]} -eq 1 ]; then
            choose_cluster "${own[0]}"
            why="$why, whose one cluster is $c_major/$c_name"
        elif [ ${#own[@]} -gt 1 ] && $configure; then
            fail "PostgreSQL $PG_MAJOR has several clusters; choose the one to configure:" \
                "$(printf '%s\n' "${own[@]}" | awk '{printf "  --cluster %s/%s (port %s, %s)\n", $1, $2, $3, $4}')"
        fi
    fi
else
    majors=$( (printf '%s\n' "${clusters[@]}" | awk 'NF {print $1}'; postgresql_installed_majors) | sort -un | xargs)
    if [ ${#clusters[@]} -gt 1 ] || [[ $majors == *' '* ]]; then
        {
            echo "scripts/install.sh: this machine has more than one PostgreSQL; it does not guess which one is"
            echo "yours. Run it again with the one to install snowflake into:"
            list_postgresql
            echo "(each major gets its own build; run once per cluster that is to use snowflake)"
        } >&2
        exit 2
    elif [ ${#clusters[@]} -eq 1 ]; then
        choose_cluster "${clusters[0]}"
        PG_CONFIG=/usr/lib/postgresql/$c_major/bin/pg_config
        why="the one cluster here"
    elif [ -n "$majors" ]; then
        PG_CONFIG=/usr/lib/postgresql/$majors/bin/pg_config
        why="the one PostgreSQL installed here (no cluster)"
    elif ! command -v pg_lsclusters >/dev/null && command -v pg_config >/dev/null; then
        PG_CONFIG=$(command -v pg_config)
        why="the pg_config on the PATH"
    else
        # No PostgreSQL at all.
        codename=$( (. /etc/os-release && echo "${VERSION_CODENAME:-}") 2>/dev/null || true)
        case $codename in
            bookworm | trixie | forky | sid)
                release_major=$(postgresql_major_of_release)
                say "No PostgreSQL is installed: installing Debian $codename's own, PostgreSQL $release_major"
                say "(postgresql-$release_major; its package creates the cluster $release_major/main)"
                PG_MAJOR=$release_major PG_CONFIG='' scripts/install-deps.sh --runtime
                exec "$0" "${arguments[@]}"
                ;;
            *)
                echo "scripts/install.sh: no PostgreSQL is installed here (no pg_lsclusters cluster, no" >&2
                echo "/usr/lib/postgresql/NN, no pg_config on the PATH). Install one, for example:" >&2
                postgresql_what_to_install
                exit 1
                ;;
        esac
    fi
fi

[ -x "$PG_CONFIG" ] || fail "$PG_CONFIG is not there: is PostgreSQL's client package (postgresql-client-NN) installed?"
PG_MAJOR=$(major_of "$PG_CONFIG")
PG_BIN=$("$PG_CONFIG" --bindir)
export PG_CONFIG PG_MAJOR
if [ "${PG_MAJOR:-0}" -lt 15 ]; then
    fail "$("$PG_CONFIG" --version) ($why) is older than snowflake supports: it needs PostgreSQL 15 or later" \
        "(the custom WAL resource manager that keeps its bound). Upgrade that cluster first (doc/upgrading.md)."
fi
say "PostgreSQL: $("$PG_CONFIG" --version), $why"
say "  pg_config: $PG_CONFIG"
[ -z "$c_name" ] || say "  cluster:   $c_major/$c_name (port $c_port, $c_status, data in $c_data)"
others=$(printf '%s\n' "${clusters[@]}" | awk -v m="$c_major" -v n="$c_name" 'NF && !($1 == m && $2 == n) {printf " %s/%s", $1, $2}')
[ -z "$others" ] || say "  left alone:${others}"

# --- what the cluster says now (before any build: a refusal changes nothing) ---
if [ -z "$c_name" ] && $configure; then
    fail "--configure needs a cluster of postgresql-common (pg_lsclusters); this PostgreSQL has none here." \
        "Run it without --configure: it prints the lines to add to its postgresql.conf, and you restart it."
fi
if [ -n "$c_name" ]; then
    config_file=/etc/postgresql/$c_major/$c_name/postgresql.conf
    # The value a setting has in the cluster's configuration files (postgresql.conf,
    # its includes, postgresql.auto.conf), running or not; empty if unset.
    setting() {
        (cd / && runuser -u "$c_owner" -- "$PG_BIN/postgres" -D "$c_data" -c config_file="$config_file" -C "$1" 2>/dev/null) || true
    }
    preloads_snowflake() {  # the list $1 names snowflake
        local item
        IFS=, read -ra items <<<"$1"
        for item in "${items[@]}"; do
            item=$(echo "$item" | sed 's/^[ "]*//; s/[ "]*$//')
            [[ $item =~ ^(\$libdir/)?snowflake(\.so)?$ ]] && return 0
        done
        return 1
    }
    current_libraries=$(setting shared_preload_libraries)
    current_datacenter=$(setting snowflake.datacenter_id)
    current_worker=$(setting snowflake.worker_id)
    wanted_libraries=$current_libraries
    preloads_snowflake "$current_libraries" || wanted_libraries=${current_libraries:+$current_libraries,}snowflake

    if $configure; then
        # An identity the cluster has already is kept; another one is refused.
        for pair in "snowflake.datacenter_id|$current_datacenter|$datacenter_id" "snowflake.worker_id|$current_worker|$worker_id"; do
            IFS='|' read -r name current wanted <<<"$pair"
            if [ -n "$current" ] && [ "$current" != "$wanted" ]; then
                fail "cluster $c_major/$c_name has $name = $current already, not $wanted: this script does not change" \
                    "a node's identity (its IDs so far carry it). If it is to change, change it yourself" \
                    "(README, \"Choosing node identities\"), or run this with --$(echo "${name#snowflake.}" | tr _ -) $current."
            fi
        done
    fi
fi

# --- what building needs ----------------------------------------------------
if [[ $PG_CONFIG == /usr/lib/postgresql/$PG_MAJOR/bin/pg_config ]] && command -v apt-get >/dev/null; then
    say "Build dependencies for PostgreSQL $PG_MAJOR only (scripts/install-deps.sh --build: its headers,"
    say "libpq-dev, libssl-dev, g++, make, the clang it was built with; no server)"
    scripts/install-deps.sh --build
else
    # Another layout (a source build, a distribution's own): check, install nothing.
    missing=()
    [ -f "$("$PG_CONFIG" --pgxs 2>/dev/null)" ] || missing+=("PGXS ($("$PG_CONFIG" --pgxs 2>/dev/null), PostgreSQL's server headers package)")
    [ -f "$("$PG_CONFIG" --includedir)/libpq-fe.h" ] || missing+=("libpq-fe.h (libpq's headers)")
    command -v g++ >/dev/null || missing+=("g++ (a C++17 compiler)")
    command -v make >/dev/null || missing+=("make")
    echo '#include <openssl/evp.h>' | g++ -E -x c++ - >/dev/null 2>&1 || missing+=("openssl/evp.h (OpenSSL's headers, libssl-dev)")
    [ ${#missing[@]} -eq 0 ] || fail "building for $PG_CONFIG needs what is not here:" "${missing[@]/#/  }"
    say "Build dependencies: $PG_CONFIG is not Debian's layout; PGXS, libpq's and OpenSSL's headers, g++ and make are there"
fi

# --- build and install ------------------------------------------------------
pkglibdir=$("$PG_CONFIG" --pkglibdir)
before=$(sha256sum "$pkglibdir/snowflake.so" 2>/dev/null | cut -d' ' -f1 || true)
say "Building with PG_CONFIG=$PG_CONFIG (make)"
make -s -j "$(nproc)" PG_CONFIG="$PG_CONFIG"
say "Installing into $pkglibdir and $("$PG_CONFIG" --sharedir)/extension (make install)"
make -s PG_CONFIG="$PG_CONFIG" install >/dev/null
after=$(sha256sum "$pkglibdir/snowflake.so" | cut -d' ' -f1)
library_changed=false
if [ "$before" = "$after" ]; then
    say "  snowflake.so was installed already, the same build"
else
    library_changed=true
    say "  snowflake.so installed ($([ -n "$before" ] && echo "replacing another build" || echo "new"))"
fi

if $upgrade_hook && [ -x /usr/bin/pg_upgradecluster ]; then
    say "The pg_upgradecluster hook for upgrades into PostgreSQL $PG_MAJOR (make install-upgrade-hook):"
    say "  pg_upgradecluster then carries the bound above this node's IDs (doc/upgrading.md)"
    make -s PG_CONFIG="$PG_CONFIG" install-upgrade-hook | sed 's/^/==>   /'
fi

# --- configuration ----------------------------------------------------------
next_step() {
    local connect=$1
    echo
    echo "Next, in the database that is to issue IDs:"
    echo "  $connect"
    echo "  CREATE EXTENSION snowflake;"
    echo "  SELECT id, d.* FROM snowflake_nextval() AS id, snowflake_decode(id) AS d;"
}
lines() {  # the three postgresql.conf lines, for the list $1
    echo "  shared_preload_libraries = '$1'"
    echo "  snowflake.datacenter_id = ${datacenter_id:-N}    # 0-31; no other node may share the pair"
    echo "  snowflake.worker_id = ${worker_id:-N}        # 0-31"
}

if [ -z "$c_name" ]; then
    echo
    echo "snowflake is installed for $("$PG_CONFIG" --version). To issue IDs, a server needs in its"
    echo "postgresql.conf (add snowflake to shared_preload_libraries' list if it has one), then a restart:"
    lines snowflake
    next_step "psql"
    exit 0
fi

if ! $configure; then
    echo
    if preloads_snowflake "$current_libraries" && [ -n "$current_datacenter" ] && [ -n "$current_worker" ]; then
        echo "Cluster $c_major/$c_name is configured already (preloads snowflake; datacenter $current_datacenter, worker $current_worker)."
        if $library_changed && [[ $c_status == online* ]]; then
            echo "It runs the build it loaded at its start: restart it alone to load the new one:"
            echo "  pg_ctlcluster $c_major $c_name restart"
        fi
    else
        echo "To issue IDs, cluster $c_major/$c_name needs in $config_file"
        echo "(shared_preload_libraries is now '${current_libraries}'; its list is kept):"
        lines "$wanted_libraries"
        echo "then a restart of that cluster alone:"
        echo "  pg_ctlcluster $c_major $c_name restart"
        echo "or let this script do both:"
        echo "  scripts/install.sh --cluster $c_major/$c_name --configure --datacenter-id N --worker-id N"
    fi
    next_step "runuser -u $c_owner -- psql --cluster $c_major/$c_name"
    exit 0
fi

changed=false
set_setting() {  # set_setting NAME VALUE CURRENT
    if [ "$3" = "$2" ]; then
        say "  $1 = '$2' already"
        return 0
    fi
    (cd / && runuser -u "$c_owner" -- pg_conftool "$c_major" "$c_name" set "$1" "$2")
    say "  $1 = '$2' (was '${3}'), in $config_file"
    changed=true
}
say "Configuring cluster $c_major/$c_name"
set_setting shared_preload_libraries "$wanted_libraries" "$current_libraries"
set_setting snowflake.datacenter_id "$datacenter_id" "$current_datacenter"
set_setting snowflake.worker_id "$worker_id" "$current_worker"
# What the server will read: a later line (an include, postgresql.auto.conf's
# ALTER SYSTEM) wins over postgresql.conf's.
for pair in "shared_preload_libraries|$wanted_libraries" "snowflake.datacenter_id|$datacenter_id" "snowflake.worker_id|$worker_id"; do
    name=${pair%%|*}
    effective=$(setting "$name")
    if [ "$effective" != "${pair#*|}" ]; then
        fail "$name is '$effective' for cluster $c_major/$c_name although $config_file now says '${pair#*|}':" \
            "a later file sets it (postgresql.auto.conf: ALTER SYSTEM; or an include). Set it there, or run" \
            "  ALTER SYSTEM SET $name = '${pair#*|}';" "then pg_ctlcluster $c_major $c_name restart"
    fi
done

connect="runuser -u $c_owner -- psql --cluster $c_major/$c_name"
running_preloads() {
    (cd / && runuser -u "$c_owner" -- psql --cluster "$c_major/$c_name" -XAtq -c 'SHOW shared_preload_libraries' 2>/dev/null) || true
}
c_status=$(postgresql_clusters | awk -v m="$c_major" -v n="$c_name" '$1 == m && $2 == n {print $4}')
if [[ $c_status != online* ]]; then
    say "Cluster $c_major/$c_name is $c_status: left so. It loads snowflake when it starts:"
    say "  pg_ctlcluster $c_major $c_name start"
elif $changed || $library_changed || ! preloads_snowflake "$(running_preloads)"; then
    say "Restarting cluster $c_major/$c_name alone (pg_ctlcluster $c_major $c_name restart), to load snowflake"
    [ -z "$others" ] || say "  (not${others})"
    if ! pg_ctlcluster "$c_major" "$c_name" restart; then
        tail -n 20 "/var/log/postgresql/postgresql-$c_major-$c_name.log" 2>/dev/null || true
        fail "cluster $c_major/$c_name did not restart (its log's last lines above)"
    fi
    preloads_snowflake "$(running_preloads)" ||
        fail "cluster $c_major/$c_name runs, but does not preload snowflake: SHOW shared_preload_libraries says '$(running_preloads)'"
    say "  cluster $c_major/$c_name is up and preloads snowflake"
else
    say "Cluster $c_major/$c_name runs with snowflake preloaded and this build: no restart needed"
fi
next_step "$connect"
