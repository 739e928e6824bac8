#!/usr/bin/env bash
# compare_arenas.sh OLD_CLI NEW_CLI: plans every golden case (tests/cli/golden.sh)
# with two builds of the CLI and compares, case by case, the arena and the layout
# (the plan without its stats line, the event table, the packed offsets).  Use it
# before regenerating tests/golden/plans.sha256 after a change that should move
# no byte: it prints each case that differs and exits 1 if any does.
# BP_DATA defaults to ../shared/data next to the source tree.
set -u
[ $# -eq 2 ] || { echo "usage: $0 OLD_CLI NEW_CLI" >&2; exit 2; }
src=$(cd "$(dirname "$0")/../.." && pwd)
export BP_DATA=${BP_DATA:-$src/../shared/data} BP_SRC=$src
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for side in old new; do
  cli=$1; [ $side = new ] && cli=$2
  BP_CLI=$cli BP_GOLDEN_ARENAS=$work/$side bash "$src/tests/cli/golden.sh" >/dev/null 2>&1
  [ -s "$work/$side" ] || { echo "$side: no cases were written (is $cli a bufplan CLI?)" >&2; exit 2; }
done
n=$(wc -l <"$work/old")
if diff "$work/old" "$work/new" >"$work/diff"; then
  echo "compare_arenas: $n cases, the same arena and layout in every one"
  exit 0
fi
echo "compare_arenas: $n cases; these differ (< old, > new):"
cat "$work/diff"
exit 1
