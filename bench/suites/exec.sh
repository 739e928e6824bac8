#!/usr/bin/env bash
# The executor: dispatch overhead per op (1M-op graphs; --quick: 100k),
# parallel speed-up with 50 us kernels and what fences cost, allocation
# overhead and peak memory of planned vs dynamic (pool, malloc) runs.
set -euo pipefail
"$BP_BUILD/bench/bench_exec" "$@"
