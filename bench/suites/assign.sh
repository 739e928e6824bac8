#!/usr/bin/env bash
# bench/run.sh assign [--quick]: every interval assigner (naive, color,
# bestfit, search) side by side on the MiniMalloc instances and the ONNX
# lifetime CSVs (arena / max-live lower bound, / best known, time; search
# with a 10 s limit and whether it proved optimality), then bestfit's
# scaling on random graph-like interval sets (10^4 .. 10^7: arena / max-live,
# wall and CPU time, color's CPU time, peak RSS).  --quick: search limit 1 s
# and scaling up to 10^6.  Markdown on stdout.
set -euo pipefail
args=()
for a in "$@"; do
  case "$a" in
    --quick) args+=(--quick) ;;
    --json) echo "assign: --json is not supported, printing Markdown" >&2 ;;
    *) echo "assign: unknown option $a" >&2; exit 2 ;;
  esac
done
exec "$BP_BUILD/bench/bench_assign" --data "$BP_DATA" "${args[@]+"${args[@]}"}"
