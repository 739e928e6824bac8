#!/usr/bin/env bash
# bench/run.sh SUITE [--quick] [--json]
# Builds the release tree if needed and runs one suite (bench/suites/SUITE.sh),
# or every suite with "all".  Each suite prints its table (or JSON).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
suite="${1:-}"
if [ -z "$suite" ] || [ "$suite" = "--help" ]; then
  echo "usage: bench/run.sh SUITE [--quick] [--json]"; echo "suites: all $(ls "$here/suites" | sed 's/\.sh$//' | tr '\n' ' ')"; exit 2
fi
shift
export BP_ROOT="$root"
export BP_BUILD="${BP_BUILD:-$root/build}"
export BP_DATA="${BP_DATA:-$root/../shared/data}"
cmake -S "$root" -B "$BP_BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BP_BUILD" -j "$(nproc)" >/dev/null
if [ "$suite" = all ]; then
  for s in "$here"/suites/*.sh; do echo "== $(basename "$s" .sh)"; bash "$s" "$@"; done
else
  [ -f "$here/suites/$suite.sh" ] || { echo "no suite $suite"; exit 2; }
  bash "$here/suites/$suite.sh" "$@"
fi
