# Opsets: a one-Relu model at opset 22 (the newest ONNX release's) plans and
# its output has the input's shape; the same model at opset 23 is refused
# with exit 2 and a message naming the opset and the newest one
# bufplan knows.  Models are written with python3-onnx at run time.
. "$(dirname "$0")/harness.bash"
onnx_python
"$PY" - "$tmp" <<'PYEOF'
import sys, onnx
from onnx import helper, TensorProto
d = sys.argv[1]
for v in (22, 23):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", v)]), f"{d}/relu{v}.onnx")
PYEOF
rc=0; "$CLI" plan "$tmp/relu22.onnx" --format json >"$tmp/p.json" 2>"$tmp/err" || rc=$?
[ "$rc" = 0 ] || bad "relu22: exit $rc: $(cat "$tmp/err")"
"$PY" - "$tmp/p.json" <<'PYEOF' || bad "relu22: the plan does not hold y as 24 bytes"
import json, sys
p = json.load(open(sys.argv[1]))
ts = {t["name"]: t for t in p["tensors"]}
sys.exit(0 if ts["y"]["bytes"] == 24 else 1)
PYEOF
expect_msg 2 'opset 23 of domain "ai.onnx" is not supported (bufplan knows opsets 1..22)' "$CLI" plan "$tmp/relu23.onnx"
exit $fail
