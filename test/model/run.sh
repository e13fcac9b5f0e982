#!/usr/bin/env bash
# The model layer: checks test/model/snowflake.pml exhaustively with SPIN
# (the NODE configuration: one node, two backends, crashes, clock steps,
# pg_upgrade), then every mutant, each of which must yield a counterexample.
# Prints states explored, depth and errors of each run. doc/model.md.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d /tmp/snowflake-model.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp snowflake.pml "$work/"
cd "$work"

# The configuration checked: time 0..3, one crash or stop or pg_upgrade, one
# clock step.
config=(-DTMAX=3 -DMAXCRASH=1 -DMAXSTEPS=1)
mutants=(NO_DURABLE NO_RESTORE NO_RESTORE_FLOOR PUBLISH_FIRST MISSING_FILE_KNOWN)

# check NAME SPIN-DEFINES...: prints "NAME: states, depth, errors"; returns
# the number of errors (0 or 1).
check() {
    local name=$1 dir
    shift
    dir=$work/$name
    mkdir -p "$dir"
    cp snowflake.pml "$dir/"
    (cd "$dir" && spin "$@" -a snowflake.pml >/dev/null &&
        gcc -O2 -w -DSAFETY -DCOLLAPSE -o pan pan.c &&
        ./pan -m2000000 -w26 >out.txt 2>&1) || true
    local states depth errors
    states=$(sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' "$dir/out.txt" | head -n 1)
    depth=$(sed -n 's/.*depth reached \([0-9]*\), errors: \([0-9]*\).*/\1/p' "$dir/out.txt" | head -n 1)
    errors=$(sed -n 's/.*depth reached \([0-9]*\), errors: \([0-9]*\).*/\2/p' "$dir/out.txt" | head -n 1)
    if [ -z "$errors" ]; then
        echo "$name: pan did not finish:" >&2
        tail -n 20 "$dir/out.txt" >&2
        errors=2
    fi
    local what
    what=$(grep -m1 -o 'assertion violated.*' "$dir/out.txt" || true)
    echo "$name: ${states:-?} states explored, depth ${depth:-?}, $errors violation(s)${what:+ ($what)}"
    echo "$errors" >"$dir/errors"
}

status=0
check model "${config[@]}"
[ "$(cat "$work/model/errors")" = 0 ] || { echo "model: the protocol has a violation" >&2; status=1; }
for mutant in "${mutants[@]}"; do
    check "MUTANT_$mutant" "${config[@]}" "-DMUTANT_$mutant" &
    # two at a time: the machine has two cores
    [ "$(jobs -rp | wc -l)" -lt 2 ] || wait -n
done
wait
for mutant in "${mutants[@]}"; do
    if [ "$(cat "$work/MUTANT_$mutant/errors")" != 1 ]; then
        echo "MUTANT_$mutant: no counterexample: the model cannot tell this safeguard is needed" >&2
        status=1
    fi
done
[ $status -eq 0 ] && echo "model: 0 violations; ${#mutants[@]} of ${#mutants[@]} mutants have a counterexample"
exit $status
