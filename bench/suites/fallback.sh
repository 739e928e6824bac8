#!/usr/bin/env bash
# Recompute and offload under budgets of 0.8, 0.6 and 0.5 of best's arena on
# the training graphs, with Chen et al.'s sqrt(n) checkpointing and "offload
# everything saved for backward" side by side (bench/bench_fallback.c).
set -euo pipefail
"$BP_BUILD/bench_fallback" "$@"
# recompute only against the exact optimum of the same step model (MILP, HiGHS)
if /usr/bin/python3 -c "import scipy" 2>/dev/null; then
  /usr/bin/python3 "$(dirname "$0")/../fallback_milp.py" "$BP_BUILD/bufplan" 40
else
  echo "SKIP: the MILP oracle needs python3-scipy"
fi
