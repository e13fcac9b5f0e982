#!/usr/bin/env bash
# The installer (scripts/install.sh, doc/install.md) on machines that run
# PostgreSQL already, as users' machines are: each scenario sets up such a
# machine in a fresh root (scripts/fresh-root.sh: it installs servers, starts
# clusters and edits /etc/os-release, so it refuses to run anywhere else),
# runs the installer, and checks what it did and what it left alone.
#
#   scripts/fresh-root.sh forky -- 'test/install/run.sh two-majors'
#       PostgreSQL 18 and 19 (19 from Debian's experimental archive), a
#       cluster of each up before the installer runs: it refuses to guess,
#       then with --cluster 19/main gets snowflake into that one (an ID
#       issued and decoded there) and leaves 18/main untouched and running
#       (its postmaster's PID unchanged, no snowflake for 18); a second run
#       changes nothing, and another identity is refused
#   scripts/fresh-root.sh forky -- 'test/install/run.sh experimental-19'
#       PostgreSQL 19 installed the way Debian's wiki says, with experimental
#       in apt's sources and `apt-get install -t experimental postgresql-19`,
#       which brings experimental's libraries along (libc6 among them when
#       experimental's is newer than forky's): scripts/install.sh --configure
#       installs the build packages that go with the libraries installed
#       (libc6-dev of the installed libc6's version, not forky's), builds,
#       configures 19/main, and an ID is issued there; the cluster is
#       dropped after, the packages stay (the scenario may run first in the
#       root of PostgreSQL 19, before its tour: the tour and the tests then
#       run on such a machine)
#   scripts/fresh-root.sh bookworm -- 'test/install/run.sh none-known-release'
#       a Debian release the scripts name, without PostgreSQL: the installer
#       installs the release's (and no other), configures its cluster, and
#       leaves it down as it found it (not in CI: a root of its own)
#   scripts/fresh-root.sh trixie -- 'test/install/run.sh none-unknown-release' \
#       'test/install/run.sh existing' 'test/install/run.sh unknown-release'
#       none-unknown-release: a release the scripts do not name, without
#       PostgreSQL: the installer and the tour say what to install, and
#       install nothing; existing: postgresql-17 installed with apt and its
#       cluster started (preloading pg_stat_statements) before, not by the
#       project's scripts: the installer gets snowflake in, keeps
#       pg_stat_statements in the list, and installs no second server;
#       unknown-release: the same machine calling itself `noble`, from a
#       clean tree: the installer and the tour with PG_CONFIG build and
#       install
#
# Run after other commands in a root (.ci/run runs them after the tests), a
# scenario first removes snowflake from every installed major, so that what
# it checks is the installer's doing. Clusters listen on Unix sockets only
# (the root shares the host's network).
set -Eeuo pipefail
# shellcheck disable=SC2154  # err_status is set by the trap itself
trap 'err_status=$?; [ "$BASHPID" != "$$" ] || echo "test/install/run.sh: line $LINENO: $BASH_COMMAND failed (status $err_status)" >&2' ERR
cd "$(dirname "$0")/../.."

if ! grep -qs 'snowflake fresh root' /usr/sbin/policy-rc.d; then
    echo "test/install/run.sh installs servers and edits /etc/os-release: it runs in a fresh root only:" >&2
    echo "  scripts/fresh-root.sh trixie -- 'test/install/run.sh existing'" >&2
    exit 2
fi

failures=0
ok() { echo "ok - $1"; }
not_ok() {
    echo "not ok - $1"
    failures=$((failures + 1))
}
check() {  # check DESCRIPTION COMMAND...
    local description=$1
    shift
    if "$@"; then ok "$description"; else not_ok "$description"; fi
}
section() { printf '\n=== %s ===\n' "$*"; }

apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
# The server packages installed (postgresql-NN), one line.
servers() { dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' 'postgresql-[0-9]*' 2>/dev/null |
    awk '$1 == "ii" && $2 ~ /^postgresql-[0-9]+$/ {print $2}' | sort | xargs; }
# A cluster MAJOR/main of the Debian packages, listening on its Unix socket
# only, started as a user starts one (pg_ctlcluster: a root has no systemd,
# and policy-rc.d kept the package from starting it). Extra arguments:
# settings NAME=VALUE.
start_cluster() {
    local major=$1 setting
    shift
    pg_lsclusters --no-header | awk '{print $1, $2}' | grep -qx "$major main" || pg_createcluster "$major" main >/dev/null
    pg_conftool "$major" main set listen_addresses ''
    for setting in "$@"; do pg_conftool "$major" main set "${setting%%=*}" "${setting#*=}"; done
    pg_ctlcluster "$major" main start
}
postmaster_pid() { head -n 1 "/var/lib/postgresql/$1/main/postmaster.pid" 2>/dev/null || echo none; }
status_of() { pg_lsclusters --no-header | awk -v m="$1" '$1 == m && $2 == "main" {print $4}'; }
psql_in() {  # psql_in MAJOR SQL: as postgres, in cluster MAJOR/main
    (cd / && runuser -u postgres -- psql --cluster "$1/main" -XAtq -v ON_ERROR_STOP=1 -c "$2")
}
# The installer's output and status, kept in $out and $status.
out='' status=0
run_installer() {
    local log
    log=$(mktemp)
    echo "--- $* ---"
    status=0
    "$@" 2>&1 | tee "$log" | sed -u 's/^/    /' || status=${PIPESTATUS[0]}
    out=$(cat "$log")
    rm -f "$log"
    echo "    (exit $status)"
}
says() { grep -qF -- "$1" <<<"$out"; }
set_codename() {
    # /etc/os-release is a link to /usr/lib/os-release: change the file.
    sed -i "s/^VERSION_CODENAME=.*/VERSION_CODENAME=$1/" /usr/lib/os-release
    echo "VERSION_CODENAME is now $1"
}
# snowflake out of every installed major, and the tree clean: the state of a
# machine that never installed it.
remove_snowflake() {
    local pg_config
    for pg_config in /usr/lib/postgresql/*/bin/pg_config; do
        [ -x "$pg_config" ] || continue
        rm -rf "$("$pg_config" --pkglibdir)/snowflake.so" "$("$pg_config" --pkglibdir)/bitcode/snowflake" \
            "$("$pg_config" --pkglibdir)/bitcode/snowflake.index.bc" "$("$pg_config" --sharedir)"/extension/snowflake[.-]*
    done
    rm -f /etc/postgresql-common/pg_upgradecluster.d/snowflake-*
    find src \( -name '*.o' -o -name '*.bc' -o -name '*.d' \) -delete
    rm -f snowflake.so .build-for
}
hook_installed() { cmp -s debian/pg_upgradecluster-hook "/etc/postgresql-common/pg_upgradecluster.d/snowflake-$1"; }

scenario_two_majors() {
    section "two majors, a cluster of each, up before the installer"
    remove_snowflake
    PG_MAJOR=19 scripts/install-deps.sh --sources  # Debian's experimental archive, for 19 only
    apt-get update -qq
    apt_install postgresql-18 postgresql-19
    start_cluster 18
    start_cluster 19
    local servers_before pid18 pid19
    servers_before=$(servers)
    pid18=$(postmaster_pid 18) pid19=$(postmaster_pid 19)
    echo "servers: $servers_before; 18/main postmaster $pid18, 19/main postmaster $pid19"

    run_installer scripts/install.sh --configure --datacenter-id 1 --worker-id 19
    check "without a choice: refused (exit 2)" test "$status" -eq 2
    check "it says it does not guess" says "does not guess"
    check "it lists 18/main" says "--cluster 18/main"
    check "it lists 19/main" says "--cluster 19/main"
    check "nothing was built or installed" test ! -e src/core/generator.o -a ! -e /usr/lib/postgresql/19/lib/snowflake.so

    run_installer scripts/install.sh --cluster 19/main --configure --datacenter-id 1 --worker-id 19
    check "with --cluster 19/main: done" test "$status" -eq 0
    check "it names PostgreSQL 19 and the cluster" says "cluster:   19/main"
    check "it names 18/main as left alone" says "left alone: 18/main"
    check "snowflake is installed for 19" test -f /usr/lib/postgresql/19/lib/snowflake.so
    check "and not for 18" test ! -e /usr/lib/postgresql/18/lib/snowflake.so
    check "the pg_upgradecluster hook for 19 is installed" hook_installed 19
    check "and none for 18" test ! -e /etc/postgresql-common/pg_upgradecluster.d/snowflake-18
    check "19/main was restarted (a new postmaster)" test "$(postmaster_pid 19)" != "$pid19"
    check "19/main is online" test "$(status_of 19)" = online
    check "18/main is online" test "$(status_of 18)" = online
    check "18/main's postmaster is the same ($pid18)" test "$(postmaster_pid 18)" = "$pid18"
    check "18/main does not preload snowflake" test "$(psql_in 18 'SHOW shared_preload_libraries')" = ""
    check "no server was installed ($(servers))" test "$(servers)" = "$servers_before"
    local decoded
    decoded=$(psql_in 19 "CREATE EXTENSION snowflake; SELECT datacenter_id || '/' || worker_id FROM snowflake_decode(snowflake_nextval())") || true
    check "an ID issued in 19/main decodes to datacenter 1, worker 19 ($decoded)" test "$decoded" = 1/19

    pid19=$(postmaster_pid 19)
    run_installer scripts/install.sh --cluster 19/main --configure --datacenter-id 1 --worker-id 19
    check "a second run: done" test "$status" -eq 0
    check "it changes no setting" says "snowflake.worker_id = '19' already"
    check "and restarts nothing" says "no restart needed"
    check "19/main's postmaster is the same" test "$(postmaster_pid 19)" = "$pid19"

    run_installer scripts/install.sh --cluster 19/main --configure --datacenter-id 1 --worker-id 20
    check "another worker ID for 19/main: refused" test "$status" -eq 1
    check "it says why" says "has snowflake.worker_id = 19 already"
    check "19/main's postmaster is the same" test "$(postmaster_pid 19)" = "$pid19"
    check "18/main's postmaster is still the same" test "$(postmaster_pid 18)" = "$pid18"

    pg_ctlcluster 18 main stop
    pg_ctlcluster 19 main stop
}

# The archive of forky's own packages in this root's apt sources (the mirror
# fresh-root.sh named).
root_mirror() { sed -n 's/^deb \([^ ]*\) forky main$/\1/p' /etc/apt/sources.list | sed -n 1p; }
# The version of an installed package, and the archives (apt's a=) that have it.
installed_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }
archives_of() { apt list --installed "$1" 2>/dev/null | sed -n "s|^$1/\([^ ]*\) .*|\1|p" | tr , ' '; }

scenario_experimental_19() {
    section "PostgreSQL 19 installed as Debian's wiki says: apt-get install -t experimental postgresql-19"
    remove_snowflake
    # A forky machine has perl (priority standard); a minimal root has only
    # perl-base, and experimental's perl, newer, does not go with forky's
    # modules that postgresql-common needs.
    apt-get update -qq
    apt_install perl
    echo "deb $(root_mirror) experimental main" >/etc/apt/sources.list.d/experimental.list
    apt-get update -qq
    # As the user types it: with its Recommends, experimental first for all it brings.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t experimental postgresql-19 >/dev/null
    local libc servers_before
    libc=$(installed_version libc6)
    echo "libc6 $libc installed (from: $(archives_of libc6)); forky has $(apt-cache madison libc6 | awk -F' [|] ' '$3 ~ / forky\// {print $2}' | sed -n 1p)"
    start_cluster 19
    servers_before=$(servers)

    run_installer scripts/install.sh --configure --datacenter-id 2 --worker-id 19
    check "scripts/install.sh --configure: done" test "$status" -eq 0
    check "snowflake is installed for 19" test -f /usr/lib/postgresql/19/lib/snowflake.so
    check "libc6-dev is of the installed libc6's version ($libc)" test "$(installed_version libc6-dev)" = "$libc"
    check "libpq-dev is of the installed libpq5's version ($(installed_version libpq5))" \
        test "$(installed_version libpq-dev)" = "$(installed_version libpq5)"
    check "no server was installed ($(servers))" test "$(servers)" = "$servers_before"
    check "19/main is online" test "$(status_of 19)" = online
    local decoded
    decoded=$(psql_in 19 "CREATE EXTENSION snowflake; SELECT datacenter_id || '/' || worker_id FROM snowflake_decode(snowflake_nextval())") || true
    check "an ID issued in 19/main decodes to datacenter 2, worker 19 ($decoded)" test "$decoded" = 2/19

    run_installer scripts/install.sh --configure --datacenter-id 2 --worker-id 19
    check "a second run: done, restarting nothing" says "no restart needed"
    # Its cluster goes (it preloads snowflake, which the next scenario in
    # this root removes first); the packages stay, as a user's would.
    pg_dropcluster --stop 19 main
}

scenario_none_unknown_release() {
    section "a release the scripts do not name, no PostgreSQL"
    remove_snowflake
    apt-get update -qq
    set_codename noble
    local servers_before
    servers_before=$(servers)
    run_installer scripts/install.sh
    check "the installer: refused (exit 1)" test "$status" -eq 1
    check "it says no PostgreSQL is installed" says "no PostgreSQL is installed"
    local major
    major=$(apt-cache depends postgresql | sed -n 's/^ *Depends: postgresql-\([0-9]*\)$/\1/p' | sed -n 1p)
    check "it says what to install (postgresql-$major)" says "apt-get install postgresql-$major postgresql-server-dev-$major"
    run_installer scripts/tour.sh
    check "the tour: refused" test "$status" -ne 0
    check "it says what to install" says "apt-get install postgresql-$major postgresql-server-dev-$major"
    check "no server was installed" test "$(servers)" = "$servers_before"
    set_codename trixie
}

scenario_none_known_release() {
    section "a Debian release the scripts name, no PostgreSQL: the installer installs the release's"
    remove_snowflake
    local major
    major=$(. scripts/postgresql.sh && echo "$PG_MAJOR")
    run_installer scripts/install.sh --configure --datacenter-id 4 --worker-id 5
    check "done" test "$status" -eq 0
    check "it says it installs the release's PostgreSQL $major" says "installing Debian"
    check "one server, the release's ($(servers))" test "$(servers)" = "postgresql-$major"
    check "it configured $major/main" says "snowflake.worker_id = '5' (was '')"
    check "and left it down, as it was (the package could not start it here)" says "pg_ctlcluster $major main start"
    start_cluster "$major"
    local decoded
    decoded=$(psql_in "$major" "CREATE EXTENSION snowflake; SELECT datacenter_id || '/' || worker_id FROM snowflake_decode(snowflake_nextval())") || true
    check "once started, an ID decodes to datacenter 4, worker 5 ($decoded)" test "$decoded" = 4/5
    pg_ctlcluster "$major" main stop
}

scenario_existing() {
    section "PostgreSQL 17 installed with apt and running, before the installer"
    remove_snowflake
    apt-get update -qq
    apt_install postgresql-17
    start_cluster 17 shared_preload_libraries=pg_stat_statements
    local servers_before pid
    servers_before=$(servers)
    echo "servers: $servers_before; 17/main postmaster $(postmaster_pid 17)"

    run_installer scripts/install.sh
    check "without --configure: done" test "$status" -eq 0
    check "it takes the one cluster here" says "the one cluster here"
    check "it prints the list with pg_stat_statements kept" says "shared_preload_libraries = 'pg_stat_statements,snowflake'"
    check "and the restart of that cluster alone" says "pg_ctlcluster 17 main restart"
    check "no server was installed" test "$(servers)" = "$servers_before"
    check "the cluster still preloads pg_stat_statements alone" test "$(psql_in 17 'SHOW shared_preload_libraries')" = pg_stat_statements

    run_installer scripts/install.sh --configure --datacenter-id 2 --worker-id 17
    check "--configure: done" test "$status" -eq 0
    check "no server was installed ($(servers))" test "$(servers)" = "$servers_before"
    check "17/main is online" test "$(status_of 17)" = online
    check "it preloads pg_stat_statements and snowflake" \
        test "$(psql_in 17 'SHOW shared_preload_libraries')" = pg_stat_statements,snowflake
    check "the pg_upgradecluster hook for 17 is installed" hook_installed 17
    local decoded
    decoded=$(psql_in 17 "CREATE EXTENSION snowflake; SELECT datacenter_id || '/' || worker_id FROM snowflake_decode(snowflake_nextval())") || true
    check "an ID decodes to datacenter 2, worker 17 ($decoded)" test "$decoded" = 2/17
    check "the next step is printed" says "CREATE EXTENSION snowflake;"

    pid=$(postmaster_pid 17)
    run_installer scripts/install.sh --configure --datacenter-id 2 --worker-id 17
    check "a second run: done" test "$status" -eq 0
    check "and restarts nothing" says "no restart needed"
    check "17/main's postmaster is the same" test "$(postmaster_pid 17)" = "$pid"
    pg_ctlcluster 17 main stop
}

scenario_unknown_release() {
    section "the same machine calling itself noble: PG_CONFIG builds and installs"
    local pg_config=/usr/lib/postgresql/17/bin/pg_config
    [ -x "$pg_config" ] || { echo "test/install/run.sh unknown-release runs after existing (PostgreSQL 17)" >&2; exit 2; }
    remove_snowflake
    set_codename noble
    run_installer env PG_CONFIG=$pg_config scripts/install.sh
    check "PG_CONFIG=... scripts/install.sh: done" test "$status" -eq 0
    check "it built (a clean tree) and installed" test -f snowflake.so -a -f /usr/lib/postgresql/17/lib/snowflake.so
    run_installer env PG_CONFIG=$pg_config scripts/tour.sh
    check "PG_CONFIG=... scripts/tour.sh: done" test "$status" -eq 0
    check "the tour issued a million distinct IDs" grep -qE '^ *1000000 \| t$' <<<"$out"
    run_installer scripts/tour.sh
    check "scripts/tour.sh alone: done, with the one major installed" test "$status" -eq 0
    check "it says which" says "using PostgreSQL 17,"
    set_codename trixie
}

started=$SECONDS
case ${1:-} in
    two-majors) scenario_two_majors ;;
    experimental-19) scenario_experimental_19 ;;
    none-unknown-release) scenario_none_unknown_release ;;
    none-known-release) scenario_none_known_release ;;
    existing) scenario_existing ;;
    unknown-release) scenario_unknown_release ;;
    *)
        echo "usage: test/install/run.sh two-majors|experimental-19|none-unknown-release|none-known-release|existing|unknown-release" >&2
        exit 2
        ;;
esac
echo
echo "install scenario ${1}: $failures failed check(s), $((SECONDS - started)) s"
[ "$failures" -eq 0 ]
