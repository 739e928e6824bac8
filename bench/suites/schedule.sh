#!/usr/bin/env bash
# Schedulers side by side: peak of given, kahn, dfs, list, lpmf, seed, best on
# the generated, training and ONNX graphs, and list/lpmf/seed/best speed on
# ~10^6 ops (--quick: generated graphs only, 10^5 ops, best limited to 0.5 s).
set -euo pipefail
"$BP_BUILD/bench_schedule" all "$@"
