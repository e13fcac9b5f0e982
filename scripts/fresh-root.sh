#!/usr/bin/env bash
# Runs the README's two commands as a newcomer types them, in a pristine
# minimal Debian root of the given release, on a clean clone of the committed
# tree (HEAD; uncommitted changes are not tested), and reports each outcome
# and its duration. Each release brings its own PostgreSQL major (README,
# "Supported PostgreSQL"): bookworm 15, trixie 17, forky 18.
#
#   scripts/fresh-root.sh bookworm|trixie|forky
#   scripts/fresh-root.sh --prepare SUITE   only make the cached pristine root
#   scripts/fresh-root.sh [--copy-in DIR] [--copy-out DIR] SUITE -- COMMAND...
#       runs these commands instead (each one string, in the clone, as root);
#       --copy-in puts DIR's files in the clone's dist/ first, --copy-out
#       copies the clone's dist/ to DIR after (CI builds the Debian packages
#       in one fresh root and installs them in another this way)
#   scripts/fresh-root.sh --pg-major NN SUITE [-- COMMAND...]
#       each command runs with PG_MAJOR=NN in its environment, as if typed
#       `PG_MAJOR=NN COMMAND` (scripts/fresh-root.sh --pg-major 19 forky:
#       the two commands on PostgreSQL 19, from Debian's experimental
#       archive); one word each, for callers that split a command line
#
# Runs as root on a Debian host. What it does:
# - The pristine root is `debootstrap --variant=minbase SUITE`, from the mirror
#   the host's apt sources name (MIRROR=... to choose), made once and kept as
#   a tarball in /var/cache/snowflake/roots/, named by a hash of the recipe
#   below, so that a changed recipe makes a new one (FRESH_ROOT_REBUILD=1
#   remakes it anyway). Each run unpacks it anew under /var/tmp, so nothing
#   installed by an earlier run is there. The .deb files apt downloads are
#   kept in /var/cache/snowflake/apt/SUITE and lent to each root's apt cache
#   (hard links in the root's own archives directory, so that roots of one
#   release can run at once; what a root downloads joins the cache when it
#   ends): a root still installs every package itself, it only skips the
#   download.
#   Builds of test dependencies (Citus, scripts/citus.sh) are kept the same
#   way, in /var/cache/snowflake/build/SUITE, lent to each root as its
#   /var/cache/snowflake/build: a root still installs them itself, it only
#   skips the compile.
# - The vendored sources beside the checkout (../shared/vendor, the Citus
#   tarball), if there, are lent read-only as /root/shared/vendor, beside
#   the clone in /root/snowflake: the clone's default paths find them.
# - The root's apt sources are those of a machine Debian's installer sets
#   up: SUITE, SUITE-updates and SUITE-security (SECURITY_MIRROR=... to
#   choose; by default the one the host's sources name), so that a root gets
#   the minor release a user gets (bookworm's main has PostgreSQL 15.18, its
#   security updates 15.20). Two more files are added, and only these:
#   forky's apt config accepts Release files past their Valid-Until date (the
#   registry serves a snapshot of the testing suite), and
#   /usr/sbin/policy-rc.d forbids service starts, so the postgresql packages
#   do not start the `main` cluster they create. The scripts never use that
#   cluster; without it, nothing in the root listens on the network.
#   Each unpacked root also gets /etc/dpkg/dpkg.cfg.d/snowflake-unsafe-io
#   (force-unsafe-io, as in Debian's container images): dpkg then skips its
#   fsync of every unpacked file, which a root that lives for one run does
#   not need. The clients root's Rust crates (633 packages) installed in
#   155 s instead of 440 (forky, beside one other root).
# - The root shares the host's network namespace (apt needs the network),
#   and its view of the network: the host's /etc/resolv.conf, and the host's
#   trusted certificates as /etc/ssl/host-ca-certificates.crt, which the
#   commands' Node.js adds to its own (NODE_EXTRA_CA_CERTS), so that npm
#   reaches its registry wherever the host does (through a TLS-inspecting
#   proxy, whose certificate authority the host trusts and a pristine root
#   does not). apt reads Debian's archive over plain HTTP and needs neither.
#   Nothing run there can take a port from a cluster on the host: every
#   server the scripts start listens on a Unix socket only, in a directory of
#   its own inside the root (scripts/cluster.sh; PostgreSQL::Test::Cluster
#   does the same).
# - /proc, /dev (bind), /dev/pts (bind) and a tmpfs on /dev/shm are mounted
#   for PostgreSQL. The root is a (private) bind mount of itself, so that its
#   / is a mount point as on a real machine: `ip netns exec` (the network
#   partition drills) makes / a slave mount and fails on a plain directory,
#   and the namespaces' own mounts under /run/netns go away with the root.
#   On exit, failure or interrupt alike, every process whose root is the
#   root is ended, everything is unmounted, and the root removed.
# - The commands run as root (the README's "as root"), with a clean
#   environment: nothing of the caller's (PG_MAJOR, PG_CONFIG, ...) leaks in
#   (--pg-major sets PG_MAJOR).
#   Their output streams here and is kept in /var/tmp/snowflake-fresh-root-logs.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)

prepare_only=false
copy_in=
copy_out=
pg_major=
while [ $# -gt 0 ]; do
    case $1 in
        --prepare) prepare_only=true ;;
        --pg-major)
            pg_major=${2:-}
            [[ $pg_major =~ ^[0-9]+$ ]] || { echo "--pg-major needs a PostgreSQL major (19), not '$pg_major'" >&2; exit 2; }
            shift
            ;;
        --copy-in) copy_in=$(realpath "${2:?--copy-in needs a directory}"); shift ;;
        --copy-out) copy_out=$(realpath -m "${2:?--copy-out needs a directory}"); shift ;;
        *) break ;;
    esac
    shift
done
suite=${1:-}
[ $# -gt 0 ] && shift
commands=(scripts/tour.sh scripts/test.sh)
if [ "${1:-}" = -- ]; then
    shift
    commands=("$@")
fi
case $suite in
    bookworm | trixie) debootstrap_script=() ;;
    forky) debootstrap_script=(/usr/share/debootstrap/scripts/sid) ;;  # bookworm's debootstrap has no forky script
    *)
        echo "usage: scripts/fresh-root.sh [--prepare] [--copy-in DIR] [--copy-out DIR] [--pg-major NN] bookworm|trixie|forky [-- COMMAND...]" >&2
        exit 2
        ;;
esac
if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/fresh-root.sh runs as root: it makes a chroot and mounts in it." >&2
    exit 1
fi

log() { printf '[fresh-root %s %(%H:%M:%S)T] %s\n' "$suite" -1 "$*"; }

# The host's tools: debootstrap, git, tar (and util-linux's mount, flock).
# One installer at a time: .ci/run starts several roots at once, and on a
# machine without debootstrap each one's apt-get found the others' apt lock
# and failed.
for tool in debootstrap git; do
    command -v "$tool" >/dev/null && continue
    (
        flock 8
        command -v "$tool" >/dev/null && exit 0  # another root installed it meanwhile
        log "installing $tool on the host"
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
            install -y -qq --no-install-recommends "$tool" >/dev/null
    ) 8>/var/lock/snowflake-fresh-root-host-tools.lock || exit 1
done

# The Debian mirror (ARCHIVE debian) or security mirror (debian-security) the
# host's apt sources name (deb822 or one-line format).
host_mirror() {
    local archive=$1 uri
    uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
        sed -n "s|^URIs: *\\(https\\?://[^ ]*/$archive\\)/\\?\$|\\1|p" | sed -n 1p)
    [ -n "$uri" ] || uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        sed -n "s|^deb \\(\\[[^]]*\\] \\)\\?\\(https\\?://[^ ]*/$archive\\)/\\? .*|\\2|p" | sed -n 1p)
    echo "${uri:-http://deb.debian.org/$archive}"
}
MIRROR=${MIRROR:-$(host_mirror debian)}
SECURITY_MIRROR=${SECURITY_MIRROR:-$(host_mirror debian-security)}

CACHE=/var/cache/snowflake
APT_CACHE=$CACHE/apt/$suite
BUILD_CACHE=$CACHE/build/$suite
VENDOR=$(dirname "$REPO")/shared/vendor
mkdir -p "$CACHE/roots" "$APT_CACHE" "$BUILD_CACHE"

# --- the pristine root, made once -------------------------------------------
make_pristine() {
    local dir
    dir=$(mktemp -d "/var/tmp/snowflake-debootstrap-$suite.XXXXXX")
    log "debootstrap --variant=minbase $suite from $MIRROR"
    if ! debootstrap --variant=minbase "$suite" "$dir" "$MIRROR" "${debootstrap_script[@]}" \
        >"$dir.log" 2>&1; then
        tail -n 20 "$dir.log"
        rm -rf --one-file-system "$dir" "$dir.log"
        return 1
    fi
    printf 'deb %s %s main\n' "$MIRROR" "$suite" "$MIRROR" "$suite-updates" \
        "$SECURITY_MIRROR" "$suite-security" >"$dir/etc/apt/sources.list"
    if [ "$suite" = forky ]; then
        echo 'Acquire::Check-Valid-Until "false";' >"$dir/etc/apt/apt.conf.d/99snapshot-valid-until"
    fi
    printf '#!/bin/sh\n# snowflake fresh root: packages start no services here.\nexit 101\n' \
        >"$dir/usr/sbin/policy-rc.d"
    chmod 755 "$dir/usr/sbin/policy-rc.d"
    chmod 755 "$dir"
    tar --numeric-owner -C "$dir" -cf "$TARBALL.tmp" .
    mv "$TARBALL.tmp" "$TARBALL"
    rm -rf --one-file-system "$dir" "$dir.log"
}

# The tarball's name follows the recipe: make_pristine as written, and what
# it reads.
recipe=$( (declare -f make_pristine; echo "$suite $MIRROR $SECURITY_MIRROR ${debootstrap_script[*]}") |
    sha256sum | cut -c1-12)
TARBALL=$CACHE/roots/$suite-$recipe.tar

started=$SECONDS
exec 9>"$CACHE/roots/$suite.lock"
flock 9  # one maker of the tarball at a time
if [ ! -f "$TARBALL" ] || [ "${FRESH_ROOT_REBUILD:-0}" = 1 ]; then
    find "$CACHE/roots" -maxdepth 1 -name "$suite*.tar" -delete  # an older recipe's
    make_pristine
else
    log "pristine root: $TARBALL ($(date -r "$TARBALL" +%F))"
fi
flock -u 9
$prepare_only && exit 0

# --- a root of our own, removed whatever happens ----------------------------
ROOT=$(mktemp -d "/var/tmp/snowflake-root-$suite.XXXXXX")
MOUNTS=()

root_processes() {
    local link pid
    for link in /proc/[0-9]*/root; do
        pid=${link#/proc/}
        pid=${pid%/root}
        [ "$(readlink "$link" 2>/dev/null)" = "$ROOT" ] && echo "$pid"
    done
    return 0
}

# The .deb files the root downloaded, into the cache (a link, or a copy
# moved into place: another root may be reading the cache meanwhile).
return_downloads() {
    local deb
    [ -d "${ARCHIVES:-}" ] || return 0
    for deb in "$ARCHIVES"/*.deb; do
        [ -f "$deb" ] && [ ! -e "$APT_CACHE/${deb##*/}" ] || continue
        ln "$deb" "$APT_CACHE/" 2>/dev/null ||
            { cp "$deb" "$APT_CACHE/.${deb##*/}.tmp" && mv "$APT_CACHE/.${deb##*/}.tmp" "$APT_CACHE/${deb##*/}"; } || true
    done
}

cleanup() {
    local status=$? pids round mount listed=
    trap - EXIT INT TERM
    for round in TERM TERM TERM KILL; do
        pids=$(root_processes)
        [ -n "$pids" ] || break
        if [ "$round" = TERM ] && [ -z "$listed" ]; then
            log "warning: processes left in the root after the commands; ending them:"
            # shellcheck disable=SC2086
            ps -o pid=,args= -p "$(echo $pids | tr ' ' ,)" | cut -c1-160 || true
            listed=1
        fi
        # shellcheck disable=SC2086
        kill -s "$round" $pids 2>/dev/null || true
        sleep 2
    done
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
        mount=${MOUNTS[i]}
        umount "$mount" 2>/dev/null || umount -l "$mount" || true
    done
    return_downloads
    if findmnt -rn -o TARGET | grep -q "^$ROOT/"; then
        log "error: something is still mounted under $ROOT; not removing it"
        status=1
    else
        rm -rf --one-file-system "$ROOT"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mount_in_root() {  # mount_in_root TARGET mount-arguments...
    local target=$ROOT$1
    shift
    mkdir -p "$target"
    mount "$@" "$target"
    MOUNTS+=("$target")
}

mount_in_root / --bind "$ROOT"
mount --make-private "$ROOT"
log "unpacking a pristine root in $ROOT"
tar --numeric-owner -C "$ROOT" -xpf "$TARBALL"
chmod 755 "$ROOT"  # mktemp made it 0700: the postgres user must reach /
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# dpkg without an fsync per file, as Debian's container images set it: a root
# lives for one run, and a crash loses it whole anyway.
echo force-unsafe-io >"$ROOT/etc/dpkg/dpkg.cfg.d/snowflake-unsafe-io"
host_certificates=
if [ -r /etc/ssl/certs/ca-certificates.crt ]; then
    mkdir -p "$ROOT/etc/ssl"
    cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/host-ca-certificates.crt"
    host_certificates=NODE_EXTRA_CA_CERTS=/etc/ssl/host-ca-certificates.crt
fi
mount_in_root /proc -t proc proc
mount_in_root /dev --bind /dev
mount --make-private "$ROOT/dev"
mount_in_root /dev/pts --bind /dev/pts
mount_in_root /dev/shm -t tmpfs -o mode=1777,size=1g tmpfs
# The root's own apt archives directory (apt locks it while it downloads,
# so one shared by two roots of a release failed the second's apt-get),
# holding hard links to the cached .deb files (the same filesystem: no copy);
# what the root downloads goes back to the cache when it ends (cleanup).
ARCHIVES=$ROOT/var/cache/apt/archives
mkdir -p "$ARCHIVES/partial"
find "$APT_CACHE" -maxdepth 1 -name '*.deb' -print0 | xargs -0 -r cp -l -t "$ARCHIVES/" 2>/dev/null \
    || find "$APT_CACHE" -maxdepth 1 -name '*.deb' -print0 | xargs -0 -r cp -n -t "$ARCHIVES/"
chroot "$ROOT" chown _apt:root /var/cache/apt/archives/partial  # apt downloads as _apt
mount_in_root /var/cache/snowflake/build --bind "$BUILD_CACHE"
if [ -d "$VENDOR" ]; then
    mount_in_root /root/shared/vendor --bind "$VENDOR"
    mount -o remount,bind,ro "$ROOT/root/shared/vendor"
else
    log "note: no $VENDOR here: layers that need its sources will skip"
fi

# The committed tree, as a clone of it: what a newcomer gets.
commit=$(git -C "$REPO" rev-parse HEAD)
[ -z "$(git -C "$REPO" status --porcelain --untracked-files=no)" ] \
    || log "note: $REPO has uncommitted changes; they are not in the clone"
git clone -q --no-checkout "$REPO" "$ROOT/root/snowflake"
git -C "$ROOT/root/snowflake" checkout -q "$commit"
log "clean clone of $(git -C "$REPO" log -1 --format='%h %s' "$commit")"
if [ -n "$copy_in" ]; then
    mkdir -p "$ROOT/root/snowflake/dist"
    cp -a "$copy_in/." "$ROOT/root/snowflake/dist/"
    log "copied into dist/: $(ls "$ROOT/root/snowflake/dist" | xargs)"
fi

# Unique: roots of one release may start in the same second (.ci/run).
mkdir -p /var/tmp/snowflake-fresh-root-logs
LOGS=$(mktemp -d "/var/tmp/snowflake-fresh-root-logs/$suite-$(date -u +%Y%m%dT%H%M%SZ).XXXX")
chmod 755 "$LOGS"
in_root() {
    chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 $host_certificates ${pg_major:+PG_MAJOR=$pg_major} \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /bin/bash -c "cd /root/snowflake && $1"
}

results=()
failed=0
for command in "${commands[@]}"; do
    name=$((${#results[@]} + 1))-$(basename "${command%% *}" .sh)
    shown=${pg_major:+PG_MAJOR=$pg_major }$command
    log "running $shown"
    step_started=$SECONDS
    # In the background, so that a signal reaches the traps at once, not
    # when the command ends.
    (in_root "$command" 2>&1 | tee "$LOGS/$name.log") &
    if wait $!; then
        outcome=passed
    else
        outcome=FAILED
        failed=$((failed + 1))
    fi
    results+=("$shown $outcome in $((SECONDS - step_started)) s")
done

if [ -n "$copy_out" ]; then
    rm -rf "$copy_out"
    mkdir -p "$copy_out"
    [ -d "$ROOT/root/snowflake/dist" ] && cp -a "$ROOT/root/snowflake/dist/." "$copy_out/"
    log "copied dist/ out to $copy_out: $(ls "$copy_out" | xargs)"
fi

# Every major the commands installed (PG_MAJOR=NN in a command chooses one).
postgresql=$(in_root 'for pg_config in /usr/lib/postgresql/*/bin/pg_config; do "$pg_config" --version; done' \
    2>/dev/null | paste -sd , | sed 's/,/, /g') || true
echo
log "results in a fresh $suite root (${postgresql:-no PostgreSQL}), commit ${commit:0:7}:"
for result in "${results[@]}"; do log "  $result"; done
log "total $((SECONDS - started)) s; logs in $LOGS"
[ "$failed" -eq 0 ]
