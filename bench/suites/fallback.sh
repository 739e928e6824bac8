#!/usr/bin/env bash
# Recompute and offload under budgets of 0.8, 0.6 and 0.5 of best's arena on
# the training graphs, with Chen et al.'s sqrt(n) checkpointing and "offload
# everything saved for backward" side by side (bench/bench_fallback.c).
set -euo pipefail
"$BP_BUILD/bench_fallback" "$@"
