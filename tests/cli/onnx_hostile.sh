# Crafted ONNX models whose values drive a shape negative (OneHot with depth
# -1 or INT64_MIN) are refused with exit 2 and a message naming the tensor,
# never a crash or a symbol id read out of bounds.  Models are written with
# python3-onnx at run time.
. "$(dirname "$0")/harness.bash"
PY=""
for p in /usr/bin/python3 python3; do "$p" -c "import onnx, numpy" 2>/dev/null && { PY=$p; break; }; done
[ -n "$PY" ] || { echo "SKIP: python3-onnx is not installed"; exit 0; }
"$PY" - "$tmp" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
d = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.INT64, [4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
for name, depth in [("onehot_m1", -1), ("onehot_min", -2**63)]:
    g = helper.make_graph([helper.make_node("OneHot", ["x", "depth", "values"], ["y"])], name, [x], [y],
                          initializer=[numpy_helper.from_array(np.array([depth], dtype=np.int64), "depth"),
                                       numpy_helper.from_array(np.array([0, 1], dtype=np.float32), "values")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/{name}.onnx")
PYEOF
for m in onehot_m1 onehot_min; do
  rc=0; timeout 20 "$CLI" plan "$tmp/$m.onnx" -q --allow-dynamic 2>"$tmp/err" || rc=$?
  [ "$rc" = 2 ] || bad "$m: exit $rc, expected 2: $(cat "$tmp/err")"
  grep -q 'tensor "y": dimension 1 would be -' "$tmp/err" || bad "$m: message: $(cat "$tmp/err")"
done
exit $fail
