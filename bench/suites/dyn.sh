#!/usr/bin/env bash
# bench/run.sh dyn [--quick] [--json] — dynamic shapes and the plan cache:
# conservative (arena + dynamic peak) vs warm-up re-planning vs a static plan
# on the symbolic transformer and the dynamic ONNX models, then planning a
# 1M-tensor graph vs loading its plan from the cache (--quick: 100k).
set -euo pipefail
bin="$BP_BUILD/bench/bench_dyn"
[ -x "$bin" ] || bin="$BP_BUILD/bench_dyn"
"$bin" all "$@"
