#!/usr/bin/env bash
# bench/run.sh onnx [--quick] [--json] — ONNX import: time and peak RSS for the
# largest models of shared/data/onnx (by file size and by node count) and a
# synthetic 1 GiB model written to /tmp at bench time (its weights are file
# holes; the importer never reads weight bytes).  Prints a Markdown table.
set -euo pipefail
bin="$BP_BUILD/bench/bench_onnx_import"
[ -x "$bin" ] || bin="$BP_BUILD/bench_onnx_import"
"$bin" "$@"
