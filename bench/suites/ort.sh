#!/usr/bin/env bash
# bench/run.sh ort [--quick] — ONNX Runtime as a measured peer (bench/ort):
# installs onnxruntime-node from npm into the bench cache (outside the repo;
# nothing is downloaded by the build or the tests), builds the heap counter,
# makes runnable copies of the torchvision models (weights filled in,
# deterministic) and prints ORT's measured activation peaks against bufplan's
# arena per model (bench/ort/ort_bench.py says what each column is).
# --quick: four models.  Skips, saying so, when npm or ONNX Runtime is missing.
set -euo pipefail
cache="${BP_BENCH_CACHE:-$HOME/.cache/bufplan-bench}/ort"
ver=1.30.0
mkdir -p "$cache"
if [ ! -f "$cache/node_modules/onnxruntime-node/package.json" ] ||
   ! grep -q "\"version\": \"$ver\"" "$cache/node_modules/onnxruntime-node/package.json"; then
  command -v npm >/dev/null || { echo "ort: skipped (npm is not installed)"; exit 0; }
  # the CPU binaries are in the npm package; the install script would fetch
  # only the CUDA ones, from another host
  ( cd "$cache" && ONNXRUNTIME_NODE_INSTALL=skip timeout 600 npm install --no-audit --no-fund --ignore-scripts \
      "onnxruntime-node@$ver" >/dev/null 2>&1 ) ||
    { echo "ort: skipped (npm could not install onnxruntime-node@$ver: registry unreachable?)"; exit 0; }
fi
node -e "require('$cache/node_modules/onnxruntime-node')" 2>/dev/null ||
  { echo "ort: skipped (onnxruntime-node does not load with this node)"; exit 0; }
/usr/bin/python3 -c "import onnx, numpy" 2>/dev/null || { echo "ort: skipped (python3-onnx is not installed)"; exit 0; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
cc -O2 -shared -fPIC -std=c11 -o "$work/heapcount.so" "$BP_ROOT/bench/ort/heapcount.c"
m="$BP_DATA/onnx/torchvision"
if [ "${1:-}" = --quick ]; then models="$m/resnet18.onnx $m/mobilenet_v2.onnx $m/squeezenet1_1.onnx $m/densenet121.onnx"
else models="$(ls "$m"/*.onnx)"; fi
echo "ONNX Runtime $ver (onnxruntime-node, CPU, basic optimization level, 1 intra-op thread); MiB"
# shellcheck disable=SC2086
/usr/bin/python3 "$BP_ROOT/bench/ort/ort_bench.py" --bufplan "$BP_BUILD/bufplan" --heapcount "$work/heapcount.so" \
  --node-path "$cache/node_modules" --work "$work" $models
