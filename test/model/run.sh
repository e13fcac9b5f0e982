#!/usr/bin/env bash
# The model layer: checks the protocol exhaustively with SPIN, then every
# mutant, each of which must yield a counterexample. Configurations:
#   NODE       test/model/snowflake.pml: one node, two backends, crashes,
#              clock steps, pg_upgrade and restores
#   REG_TIME   test/model/registry.pml: two nodes, the registry, a standby
#              promoted or a copy started; no fault but stalls, 5 units
#   REG_LOST, REG_CRASH, REG_STEP
#              the same for 3 units with one fault each: one lost or late
#              message or a partition; one crash or clean restart (with its
#              release); one clock step of either node
#   REG_2B     the same with two backends per node, which interleave with
#              each other (the compare-and-swap on last_id); no fault but
#              stalls, 4 units
#   REG_2B_LOST, REG_2B_CRASH, REG_2B_STEP
#              two backends per node with each fault alone, 2 units
#   REG_FAULT  the same, a crash or clean restart and a lost or late message
#              or a partition together: too large to be exhaustive here, so
#              only the bounds of the mutants that need those faults
#   LIVE       the same file: a node with a good clock and a reachable
#              registry eventually issues (an LTL property, weak fairness)
#   ORIGIN     test/model/origin.pml: the bound's origin: state file, marks,
#              vouches, given, the replication origin of the bound; the
#              check of the databases; creations and drops of the extension,
#              copies without pg_snowflake/ (with or without the origin),
#              pg_upgrade (tried-out new clusters, Debian's hook), restarts
#              with and without the preload, the operator's bound
#   ORIGIN_STALE
#              the same with an older copy of pg_snowflake/state put back,
#              one upgrade and two creations or drops
#   ORIGIN_DUMP the same file with the dump's carrier of the bound (-DDUMPS,
#              issue 44): a node moved by pg_dumpall and a restore under
#              the same identity, within smaller bounds than ORIGIN's
# Prints states explored, depth, errors and seconds of each run.
# doc/model.md says what each one bounds. MODEL_JOBS (default 2, the
# machine's cores) is how many searches run at a time.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d /tmp/snowflake-model.XXXXXX)
trap 'rm -rf "$work"' EXIT

# shellcheck disable=SC2034 # read through declare -n
NODE=(snowflake.pml safety -DTMAX=3 -DMAXCRASH=1 -DMAXSTEPS=1)
# shellcheck disable=SC2034
REG_FAULT=(registry.pml safety -DTMAX=4 -DMAXSTEPS=0 -DMAXCRASH=1 -DMAXLOST=1)
# shellcheck disable=SC2034
REG_TIME=(registry.pml safety -DTMAX=5 -DMAXSTEPS=0 -DMAXCRASH=0 -DMAXLOST=0)
# shellcheck disable=SC2034
REG_LOST=(registry.pml safety -DTMAX=3 -DMAXSTEPS=0 -DMAXCRASH=0 -DMAXLOST=1)
# shellcheck disable=SC2034
REG_CRASH=(registry.pml safety -DTMAX=3 -DMAXSTEPS=0 -DMAXCRASH=1 -DMAXLOST=0)
# shellcheck disable=SC2034
REG_STEP=(registry.pml safety -DTMAX=3 -DMAXSTEPS=1 -DMAXCRASH=0 -DMAXLOST=0)
# shellcheck disable=SC2034
REG_2B=(registry.pml safety -DBACKENDS=2 -DTMAX=4 -DMAXSTEPS=0 -DMAXCRASH=0 -DMAXLOST=0)
# shellcheck disable=SC2034
REG_2B_LOST=(registry.pml safety -DBACKENDS=2 -DTMAX=2 -DMAXSTEPS=0 -DMAXCRASH=0 -DMAXLOST=1)
# shellcheck disable=SC2034
REG_2B_CRASH=(registry.pml safety -DBACKENDS=2 -DTMAX=2 -DMAXSTEPS=0 -DMAXCRASH=1 -DMAXLOST=0)
# shellcheck disable=SC2034
REG_2B_STEP=(registry.pml safety -DBACKENDS=2 -DTMAX=2 -DMAXSTEPS=1 -DMAXCRASH=0 -DMAXLOST=0)
# shellcheck disable=SC2034
ORIGIN=(origin.pml safety -DCMAX=3 -DMAXRESTART=3 -DMAXCOPY=1 -DMAXUPG=2 -DMAXDDL=4 -DMAXSTALE=0)
# shellcheck disable=SC2034
ORIGIN_STALE=(origin.pml safety -DCMAX=3 -DMAXRESTART=3 -DMAXCOPY=1 -DMAXUPG=1 -DMAXDDL=2 -DMAXSTALE=1)
# shellcheck disable=SC2034
ORIGIN_DUMP=(origin.pml safety -DDUMPS -DCMAX=3 -DMAXRESTART=3 -DMAXCOPY=1 -DMAXUPG=1 -DMAXDDL=3 -DMAXDUMP=1 -DMAXSTALE=0)
# shellcheck disable=SC2034
LIVE=(registry.pml live -DLIVE -DLEASE=3 -DDRIFT=0 -DTMAX=3 -DMAXSTEPS=1 -DMAXCRASH=1 -DMAXLOST=0)

# Each mutant: NAME CONFIGURATION [SPIN-DEFINES...] (the safeguard removed is
# -DMUTANT_NAME unless defines are given, which may also change the
# configuration's bounds: the last definition wins; doc/model.md, "Mutants").
mutants=(
    "NO_DURABLE NODE"
    "NO_RESTORE NODE"
    "NO_RESTORE_FLOOR NODE"
    "PUBLISH_FIRST NODE"
    "MISSING_FILE_KNOWN NODE"
    "NO_FLOOR REG_FAULT"
    "NO_CAP REG_TIME -DMUTANT_NO_CAP -DTMAX=4 -DMAXSTEPS=1"
    "LEASE_BEFORE REG_FAULT"
    "NO_MARGIN REG_TIME"
    "DRIFT_PAST_MARGIN REG_TIME -DDRIFT=2"
    "STALL_RECLAIM REG_TIME"
    "RENEW_LOWERS REG_TIME -DMUTANT_RENEW_LOWERS -DTMAX=3 -DMAXSTEPS=2 -DMAXLOST=1 -DSTEP_HI=0"
    "RELEASE_LATE REG_FAULT"
    "LIVE_UNREACHABLE LIVE -DMUTANT_LIVE_UNREACHABLE -DMAXLOST=1"
    "NO_CAS REG_2B"
    "NO_MARKS ORIGIN -DMUTANT_NO_MARKS -DMAXUPG=0"
    "MARKS_FORGOTTEN ORIGIN -DMUTANT_MARKS_FORGOTTEN -DMAXUPG=0"
    "NO_UPGRADE_MARK ORIGIN"
    "NO_DROP_MARK ORIGIN"
    "DROP_MARK_LATE ORIGIN"
    "VOUCH_ANY ORIGIN"
    "GIVEN_ALONE ORIGIN"
    "GIVEN_DESPITE_MARKS ORIGIN"
    "DATA_WITHOUT_EXTENSION ORIGIN -DDATA_WITHOUT_EXTENSION"
    "DROP_WITHOUT_PRELOAD ORIGIN -DDROP_WITHOUT_PRELOAD"
    "NO_DUMP_ADOPTION ORIGIN_DUMP"
    "NO_ORIGIN_CHECK ORIGIN_STALE"
    "ORIGIN_KEPT_BY_UPGRADE ORIGIN"
)

# check NAME FILE KIND SPIN-DEFINES...: prints "NAME: states, depth, errors,
# seconds"; leaves the number of errors in $work/NAME/errors.
check() {
    local name=$1 file=$2 kind=$3 dir start
    shift 3
    dir=$work/$name
    mkdir -p "$dir"
    cp "$file" "$dir/"
    start=$(date +%s%N)
    if [ "$kind" = live ]; then
        (cd "$dir" && spin "$@" -a "$file" >/dev/null 2>&1 &&
            gcc -O2 -w -DCOLLAPSE -o pan pan.c &&
            ./pan -a -f -m2000000 -w22 >out.txt 2>&1) || true
    else
        (cd "$dir" && spin "$@" -a "$file" >/dev/null 2>&1 &&
            gcc -O2 -w -DSAFETY -DCOLLAPSE -o pan pan.c &&
            ./pan -m2000000 -w25 >out.txt 2>&1) || true
    fi
    local seconds states depth errors what
    seconds=$((($(date +%s%N) - start) / 1000000000))
    states=$(sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' "$dir/out.txt" | sed -n 1p)
    depth=$(sed -n 's/.*depth reached \([0-9]*\), errors: \([0-9]*\).*/\1/p' "$dir/out.txt" | sed -n 1p)
    errors=$(sed -n 's/.*depth reached \([0-9]*\), errors: \([0-9]*\).*/\2/p' "$dir/out.txt" | sed -n 1p)
    if [ -z "$errors" ]; then
        echo "$name: pan did not finish:" >&2
        tail -n 20 "$dir/out.txt" >&2
        errors=2
    fi
    what=$(grep -m1 -o -e 'assertion violated.*' -e 'acceptance cycle.*' "$dir/out.txt" || true)
    printf '%s: %s states explored, depth %s, %s violation(s)%s, %d s\n' "$name" "${states:-?}" \
        "${depth:-?}" "$errors" "${what:+ ($what)}" "$seconds"
    echo "$errors" >"$dir/errors"
}

# MODEL_JOBS at a time
throttle() {
    [ "$(jobs -rp | wc -l)" -lt "${MODEL_JOBS:-2}" ] || wait -n
}

configs=(REG_2B REG_2B_STEP NODE REG_2B_LOST REG_2B_CRASH ORIGIN ORIGIN_DUMP REG_TIME ORIGIN_STALE LIVE REG_LOST
    REG_CRASH REG_STEP)
status=0
layer_start=$(date +%s)
for config in "${configs[@]}"; do
    declare -n spec=$config
    check "$config" "${spec[@]}" &
    unset -n spec
    throttle
done
wait
for config in "${configs[@]}"; do
    if [ "$(cat "$work/$config/errors")" != 0 ]; then
        echo "$config: the protocol has a violation" >&2
        status=1
    fi
done
for entry in "${mutants[@]}"; do
    read -r name config defines <<<"$entry"
    declare -n spec=$config
    # shellcheck disable=SC2086 # the defines are words
    check "MUTANT_$name" "${spec[@]}" ${defines:--DMUTANT_$name} &
    unset -n spec
    throttle
done
wait
for entry in "${mutants[@]}"; do
    read -r name _ <<<"$entry"
    if [ "$(cat "$work/MUTANT_$name/errors")" != 1 ]; then
        echo "MUTANT_$name: no counterexample: the model cannot tell this safeguard is needed" >&2
        status=1
    fi
done
if [ $status -eq 0 ]; then
    echo "model: 0 violations in ${#configs[@]} configurations; ${#mutants[@]} of ${#mutants[@]} mutants have a counterexample ($(($(date +%s) - layer_start)) s)"
fi
exit $status
