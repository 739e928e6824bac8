#!/usr/bin/env bash
# tests/onnx/ort_compare.sh [MODEL...] — a manual check (not run by ctest: it
# needs node and the onnxruntime-node package): each torchvision model of
# $BP_DATA/onnx/torchvision gets random weights, is optimised by ONNX Runtime
# (level "extended", which writes com.microsoft FusedConv, FusedMatMul,
# BiasGelu, QuickGelu, ...), and is run by ONNX Runtime with every node output
# made a graph output; bufplan plans the optimised model (--dim N=1) and every
# tensor's bytes must equal what ONNX Runtime produced.  Prints one line per
# model; exits 1 on any difference.
#   setup: (cd DIR && npm install --ignore-scripts onnxruntime-node); ORT_NODE_DIR=DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cli=${BP_CLI:-$root/build/bufplan}
data=${BP_DATA:-$root/../shared/data}/onnx/torchvision
ortdir=${ORT_NODE_DIR:?set ORT_NODE_DIR to a folder with node_modules/onnxruntime-node}
py=/usr/bin/python3
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cat >"$w/prep.py" <<'PY'
import sys, onnx, numpy as np
from onnx import numpy_helper
m = onnx.load(sys.argv[1], load_external_data=False)
for i, t in enumerate(m.graph.initializer):
    if t.data_location == onnx.TensorProto.EXTERNAL:
        a = (np.random.RandomState(i).standard_normal(tuple(t.dims)) * 0.01).astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type])
        m.graph.initializer[i].CopyFrom(numpy_helper.from_array(a, t.name))
onnx.save(m, sys.argv[2])
PY
cat >"$w/all_outputs.py" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
have = {o.name for o in m.graph.output}
for n in m.graph.node:
    for o in n.output:
        if o and o not in have:
            m.graph.output.append(onnx.helper.make_empty_tensor_value_info(o)); have.add(o)
onnx.save(m, sys.argv[2])
PY
cat >"$w/compare.py" <<'PY'
import sys, json, collections, onnx
ort, plan = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
size = {"float32": 4, "int64": 8, "float16": 2, "int32": 4, "uint8": 1, "int8": 1, "bool": 1}
got = {t["name"]: t["bytes"] for t in plan["tensors"]}
n = bad = 0
for k, v in ort.items():
    e = 1
    for d in v["dims"]: e *= d
    if k in got:
        n += 1
        if got[k] != e * size[v["type"]]:
            bad += 1
            print("  differs:", k, v, got[k])
m = onnx.load(sys.argv[3], load_external_data=False)
ops = collections.Counter(x.op_type for x in m.graph.node if x.domain == "com.microsoft")
print(f"{sys.argv[4]}: {n} tensors compared, {bad} differ; com.microsoft: {dict(ops)}")
sys.exit(1 if bad or not n else 0)
PY
cat >"$w/ort.js" <<'JS'
const ort = require(process.env.ORT_NODE_DIR + '/node_modules/onnxruntime-node');
(async () => {
  const [mode, src, dst, side] = process.argv.slice(2);
  if (mode === 'optimize') {
    await ort.InferenceSession.create(src, {graphOptimizationLevel: 'extended', optimizedModelFilePath: dst});
    return;
  }
  const s = await ort.InferenceSession.create(src, {graphOptimizationLevel: 'disabled'});
  const n = +side, feeds = {};
  for (const name of s.inputNames) feeds[name] = new ort.Tensor('float32', new Float32Array(3 * n * n), [1, 3, n, n]);
  const out = await s.run(feeds), r = {};
  for (const k of Object.keys(out)) r[k] = {dims: out[k].dims, type: out[k].type};
  require('fs').writeFileSync(dst, JSON.stringify(r));
})().catch(e => { console.error(e); process.exit(1); });
JS
export ORT_NODE_DIR=$ortdir
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet18 resnet50 mobilenet_v2 mobilenet_v3_small mnasnet1_0 efficientnet_b0 densenet121 googlenet inception_v3 shufflenet_v2_x1_0 squeezenet1_1 regnet_y_400mf convnext_tiny swin_t vit_b_16)
fail=0
for m in "${models[@]}"; do
  side=224; [ "$m" = inception_v3 ] && side=299
  $py "$w/prep.py" "$data/$m.onnx" "$w/$m.onnx"
  node "$w/ort.js" optimize "$w/$m.onnx" "$w/${m}_ort.onnx"
  $py "$w/all_outputs.py" "$w/${m}_ort.onnx" "$w/${m}_all.onnx"
  node "$w/ort.js" run "$w/${m}_all.onnx" "$w/$m.shapes.json" "$side"
  "$cli" plan "$w/${m}_ort.onnx" --dim N=1 -q -o "$w/$m.plan.json"
  $py "$w/compare.py" "$w/$m.shapes.json" "$w/$m.plan.json" "$w/${m}_ort.onnx" "$m" || fail=1
  rm -f "$w/$m.onnx" "$w/${m}_all.onnx" "$w/${m}_ort.onnx"
done
exit $fail
