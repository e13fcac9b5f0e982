#!/usr/bin/env bash
# Installs the Debian packages snowflake needs to build, run and test it
# (design.md section 9). Idempotent: installs only what is missing.
#
#   scripts/install-deps.sh            everything (build, tests, benchmarks)
#   scripts/install-deps.sh --runtime  only what the five-minute tour needs
set -euo pipefail

runtime=(postgresql-15 postgresql-server-dev-15 g++ make clang-14 llvm-14)
testing=(postgresql-15-pgtap libipc-run-perl libfaketime cmake googletest
         libgtest-dev libbenchmark-dev clang-format)

packages=("${runtime[@]}")
[ "${1:-}" = "--runtime" ] || packages+=("${testing[@]}")

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)
echo "Installing: ${missing[*]}"
"${as_root[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
