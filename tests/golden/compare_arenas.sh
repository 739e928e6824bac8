#!/usr/bin/env bash
# compare_arenas.sh OLD_CLI NEW_CLI: plans every golden case (tests/cli/golden.sh)
# with two builds of the CLI and compares, case by case, the arena and the layout
# (the plan without its stats line, the event table, the packed offsets).  Use it
# before regenerating tests/golden/plans.sha256 after a change that should move
# no byte: it prints each case that differs and exits 1 if any does.
# With --no-increase first, a change that may move bytes but must not cost
# any (a new in-place rule): it prints each case whose arena went down and
# exits 1 only if one went up, or planned before and does not now.
# BP_DATA defaults to ../shared/data next to the source tree.
set -u
mode=same
[ "${1:-}" = --no-increase ] && { mode=no-increase; shift; }
[ $# -eq 2 ] || { echo "usage: $0 [--no-increase] OLD_CLI NEW_CLI" >&2; exit 2; }
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
if [ $mode = no-increase ]; then
  # by case name: a case without arena= is a packed instance (its layout
  # only); a case the new CLI no longer plans is missing from its list
  awk -v n="$n" '
    { a = ""; for (i = 2; i <= NF; i++) if ($i ~ /^arena=/) a = substr($i, 7) }
    FNR == NR { if (a != "") old[$1] = a; next }
    { seen[$1] = 1; if (!($1 in old) || a == "") next
      if (a + 0 > old[$1] + 0) { print "up:   " $1 " " old[$1] " -> " a; bad = 1 }
      else if (a + 0 < old[$1] + 0) { print "down: " $1 " " old[$1] " -> " a; down++ } }
    END { for (k in old) if (!(k in seen)) { print "no longer plans: " k; bad = 1 }
          printf "compare_arenas: %d cases, %d arenas down, %s\n", n, down, bad ? "some went up or no longer plan" : "none up"
          exit bad }' "$work/old" "$work/new"
  exit
fi
if diff "$work/old" "$work/new" >"$work/diff"; then
  echo "compare_arenas: $n cases, the same arena and layout in every one"
  exit 0
fi
echo "compare_arenas: $n cases; these differ (< old, > new):"
cat "$work/diff"
exit 1
