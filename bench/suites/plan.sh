#!/usr/bin/env bash
# The core planner: assigner quality on generated graphs and planning speed
# from 10^4 to 10^7 tensors (--quick stops at 10^6).
set -euo pipefail
"$BP_BUILD/bench/bench_plan" all "$@"
