#!/usr/bin/env bash
# Every scheduler through the CLI: the plan verifies, best's lower bound is
# <= every baseline's, and a budget that cannot fit exits 1 with the
# documented message.
set -euo pipefail
cli="${BP_CLI:?BP_CLI not set}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0
lb() { grep -o '"lower_bound_bytes": *[0-9]*' "$1" | grep -o '[0-9]*$'; }
for kind in diamond randwire; do
  "$cli" gen "$kind" --seed 3 -o "$tmp/$kind.json"
  min=""
  for s in given kahn dfs list lpmf seed best; do
    "$cli" plan "$tmp/$kind.json" -s "$s" --time-limit 0.2 --format json -o "$tmp/$kind.$s.json" >/dev/null
    "$cli" verify "$tmp/$kind.json" "$tmp/$kind.$s.json" >/dev/null || { echo "$kind $s: plan does not verify"; fail=1; }
    v="$(lb "$tmp/$kind.$s.json")"
    [ -n "$v" ] || { echo "$kind $s: no lower_bound_bytes"; fail=1; continue; }
    if [ "$s" = best ]; then
      [ "$v" -le "$min" ] || { echo "$kind: best $v > min baseline $min"; fail=1; }
    elif [ -z "$min" ] || [ "$v" -lt "$min" ]; then min="$v"; fi
  done
done
# optimal on a small graph
"$cli" plan "$tmp/diamond.json" -s optimal --format json -o "$tmp/opt.json" >/dev/null
"$cli" verify "$tmp/diamond.json" "$tmp/opt.json" >/dev/null || { echo "optimal: plan does not verify"; fail=1; }
# a budget nothing fits, without recompute and offload: exit 1 and the message
set +e
"$cli" plan "$tmp/diamond.json" -s list --budget 1 --fallback none -o "$tmp/b.json" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 1 ] || { echo "budget: exit $rc, want 1"; fail=1; }
grep -q 'no schedule found that fits the budget of 1 bytes; the smallest peak found is [0-9]* bytes' "$tmp/err" \
  || { echo "budget message: $(cat "$tmp/err")"; fail=1; }
grep -q 'cannot run at step 0: it needs [0-9]* bytes live' "$tmp/err" || { echo "budget message: $(cat "$tmp/err")"; fail=1; }
# a budget that fits the smallest peak found
peak="$(lb "$tmp/diamond.best.json")"
"$cli" plan "$tmp/diamond.json" -s given --budget "$((peak * 2))" --format json -o "$tmp/b2.json" >/dev/null || { echo "budget of twice the peak does not fit"; fail=1; }
exit $fail
