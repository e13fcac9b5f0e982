#!/usr/bin/env bash
# The fuzz layer (scripts/test.sh fuzz): builds the libFuzzer targets of the
# core with clang under ASan and UBSan, runs each for a bounded time from its
# seed corpus (test/fuzz/corpus/NAME), then the differential check of the
# layout arithmetic against Python's integers (layout_reference.py). Prints
# executions and coverage per target; any finding (a crash, a sanitizer
# report, a failed invariant, a leak, a timeout) fails it, and the input that
# caused it is left in build/fuzz/ to replay:
#
#   build/fuzz/NAME build/fuzz/NAME-crash-...      replays one input
#
#   test/fuzz/run.sh                     every target FUZZ_SECONDS (45) each
#   FUZZ_SECONDS=600 test/fuzz/run.sh    a long run (doc/fuzzing.md)
#   test/fuzz/run.sh base32 layout_text  some targets only
#
# CLANG is the clang++ to build with (scripts/test.sh passes the one
# install-deps.sh installs with its runtimes, libclang-rt-NN-dev).
set -euo pipefail
cd "$(dirname "$0")/../.."
CLANG=${CLANG:-clang++}
SECONDS_PER_TARGET=${FUZZ_SECONDS:-45}
REFERENCE_CASES=${FUZZ_REFERENCE_CASES:-20000}
OUT=build/fuzz
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(layout_text base32 layout_arith)
mkdir -p "$OUT"

# shellcheck disable=SC2054  # the commas are -fsanitize's
flags=(-std=c++17 -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Wshadow -Werror
    -fsanitize=address,undefined -fno-sanitize-recover=all -Isrc/core -Itest/fuzz)
core=(src/core/base32.cpp src/core/layout_text.cpp src/core/generator.cpp)
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

sources_of() {
    case $1 in
        layout_arith) echo test/fuzz/layout_arith_fuzz.cpp test/fuzz/generator_run.cpp ;;
        *) echo "test/fuzz/$1_fuzz.cpp" ;;
    esac
}

echo "fuzz: building with $("$CLANG" --version | head -n 1)"
for target in "${targets[@]}"; do
    # shellcheck disable=SC2046  # the list of sources, split on purpose
    "$CLANG" "${flags[@]}" -fsanitize=fuzzer $(sources_of "$target") "${core[@]}" -o "$OUT/$target" &
done
"$CLANG" "${flags[@]}" test/fuzz/layout_driver.cpp "${core[@]}" -o "$OUT/layout_driver" &
for job in $(jobs -p); do wait "$job"; done

status=0
summary=()
for target in "${targets[@]}"; do
    work=$OUT/corpus-$target log=$OUT/$target.log
    mkdir -p "$work"
    echo "fuzz: $target for ${SECONDS_PER_TARGET}s (seeds test/fuzz/corpus/$target, new inputs in $work)"
    # New inputs go to the first directory; the seeds are only read.
    if "$OUT/$target" -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 -timeout=10 \
        -rss_limit_mb=2048 -artifact_prefix="$OUT/$target-" "$work" "test/fuzz/corpus/$target" \
        >"$log" 2>&1; then
        result=ok
    else
        result=FAILED
        status=1
        grep -E 'ERROR|invariant failed|runtime error|Test unit written' "$log" | head -n 20 || true
        tail -n 40 "$log"
    fi
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    coverage=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -n 1)
    summary+=("$(printf '%-13s %-6s executions %-10s %s' "$target" "$result" "${executions:-?}" "${coverage:-?}")")
done

echo "fuzz: the layout arithmetic against Python's integers ($REFERENCE_CASES layouts)"
if python3 test/fuzz/layout_reference.py --driver "$OUT/layout_driver" --cases "$REFERENCE_CASES"; then
    summary+=("$(printf '%-13s %-6s %s layouts, as Python computes them' reference ok "$REFERENCE_CASES")")
else
    summary+=("$(printf '%-13s %-6s' reference FAILED)")
    status=1
fi

echo "fuzz: summary"
printf '  %s\n' "${summary[@]}"
exit $status
