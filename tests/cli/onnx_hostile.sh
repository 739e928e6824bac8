# Crafted ONNX models: values that drive a shape negative (OneHot with depth
# -1 or INT64_MIN) are refused with exit 2 and a message naming the tensor,
# never a crash or a symbol id read out of bounds; constant folding that
# would loop on the input's values (Pow with exponent INT64_MAX) or convert an
# out-of-range float (1e38, NaN) finishes without undefined behaviour; a
# Conv/Pool whose pads, strides or dilations overflow the output size is an
# error naming the node; an element-wise op without inputs, Slice steps and
# Split dims near INT64_MAX are refused or sized without overflow; an integer
# Range is sized exactly.
# Models are written with python3-onnx at run time.
. "$(dirname "$0")/harness.bash"
onnx_python
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
def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name + "_v"))
xf = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
models = {
    "pow_loop": [const("b", np.array([1], dtype=np.int64)), const("e", np.array([2**63 - 1], dtype=np.int64)),
                 helper.make_node("Pow", ["b", "e"], ["p"]), helper.make_node("Concat", ["p", "p"], ["s"], axis=0),
                 helper.make_node("Reshape", ["x", "s"], ["y"])],
    "cast_big": [const("f", np.array([1e38, 1e38], dtype=np.float32)), helper.make_node("Add", ["f", "f"], ["g"]),
                 helper.make_node("Cast", ["g"], ["s"], to=TensorProto.INT64), helper.make_node("Reshape", ["x", "s"], ["y"])],
    "cast_nan": [const("f", np.array([np.nan, 6], dtype=np.float32)),
                 helper.make_node("Cast", ["f"], ["s"], to=TensorProto.INT64), helper.make_node("Reshape", ["x", "s"], ["y"])],
}
x4 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])
w = numpy_helper.from_array(np.zeros((1, 1, 3, 3), dtype=np.float32), "w")
I64 = 2**63 - 1
for name, node, inits in [
        ("conv_pads", helper.make_node("Conv", ["x", "w"], ["y"], pads=[I64, I64, 0, 0]), [w]),
        ("conv_dil", helper.make_node("Conv", ["x", "w"], ["y"], dilations=[I64, 1]), [w]),
        ("convT_stride", helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[I64, 1]), [w]),
        ("pool_pads", helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[I64, 0, I64, 0]), [])]:
    g = helper.make_graph([node], name, [x4], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/{name}.onnx")
from onnx import helper, TensorProto, numpy_helper
def save(name, nodes, ins, inits=()):  # more hostile models, all named h_*
    name = "h_" + name
    g = helper.make_graph(nodes, name, ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=list(inits))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/{name}.onnx")
x4 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])
w = numpy_helper.from_array(np.zeros((1, 1, 3, 3), dtype=np.float32), "w")
save("conv_pads", [helper.make_node("Conv", ["x", "w"], ["y"], pads=[I64, I64, 0, 0])], [x4], [w])
save("conv_dil", [helper.make_node("Conv", ["x", "w"], ["y"], dilations=[I64, 1])], [x4], [w])
save("conv_stride", [helper.make_node("Conv", ["x", "w"], ["y"], strides=[I64, 1])], [x4], [w])
save("pool_pads", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[I64, 0, I64, 0])], [x4])
save("convT_pads", [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[I64, 1])], [x4], [w])
save("s2d", [helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2**32)], [x4])
xb = helper.make_tensor_value_info("x", TensorProto.BOOL, [2**62])
save("concat_big", [helper.make_node("Concat", ["x", "x"], ["y"], axis=0)], [xb])
x1 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [10])
save("slice_step", [const("st", np.array([0], dtype=np.int64)), const("en", np.array([10], dtype=np.int64)),
                    const("ax", np.array([0], dtype=np.int64)), const("sp", np.array([-2**63], dtype=np.int64)),
                    helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [x1])
save("pad_big", [const("p", np.array([I64, 0], dtype=np.int64)), helper.make_node("Pad", ["x", "p"], ["y"])], [x1])
save("range_inf", [const("a", np.array(0, dtype=np.float32)), const("b", np.array(np.inf, dtype=np.float32)), const("c", np.array(1, dtype=np.float32)),
                   helper.make_node("Range", ["a", "b", "c"], ["y"])], [x1])
save("range_tiny", [const("a", np.array(0, dtype=np.float32)), const("b", np.array(1, dtype=np.float32)), const("c", np.array(1e-38, dtype=np.float32)),
                   helper.make_node("Range", ["a", "b", "c"], ["y"])], [x1])
save("range_i64", [const("a", np.array(-2**63, dtype=np.int64)), const("b", np.array(I64, dtype=np.int64)), const("c", np.array(1, dtype=np.int64)),
                   helper.make_node("Range", ["a", "b", "c"], ["y"])], [x1])
save("add_no_inputs", [helper.make_node("Add", [], ["y"])], [x1])
save("slice_step_max", [const("st", np.array([0], dtype=np.int64)), const("en", np.array([I64], dtype=np.int64)),
                        const("ax", np.array([0], dtype=np.int64)), const("sp", np.array([I64 - 1], dtype=np.int64)),
                        helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [x1])
save("split_dim_max", [helper.make_node("Split", ["x"], ["y", "z", "w"], axis=0)],
     [helper.make_tensor_value_info("x", TensorProto.BOOL, [I64])])
save("range_exact", [const("a", np.array(-2**63, dtype=np.int64)), const("b", np.array(1, dtype=np.int64)), const("c", np.array(I64, dtype=np.int64)),
                     helper.make_node("Range", ["a", "b", "c"], ["r"]), helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT)], [x1])
save("split_neg", [const("sp", np.array([-1, 11], dtype=np.int64)), helper.make_node("Split", ["x", "sp"], ["y", "z"], axis=0)], [x1])

for name, nodes in models.items():
    g = helper.make_graph(nodes, name, [xf], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/{name}.onnx")
PYEOF
for m in onehot_m1 onehot_min; do
  rc=0; timeout 20 "$CLI" plan "$tmp/$m.onnx" -q --allow-dynamic 2>"$tmp/err" || rc=$?
  [ "$rc" = 2 ] || bad "$m: exit $rc, expected 2: $(cat "$tmp/err")"
  grep -q 'tensor "y": dimension 1 would be -' "$tmp/err" || bad "$m: message: $(cat "$tmp/err")"
done
for m in conv_pads conv_dil convT_stride pool_pads; do
  rc=0; timeout 20 "$CLI" plan "$tmp/$m.onnx" -q --allow-dynamic 2>"$tmp/err" || rc=$?
  [ "$rc" = 2 ] || bad "$m: exit $rc, expected 2: $(cat "$tmp/err")"
  grep -q "overflows 64 bits" "$tmp/err" || bad "$m: message: $(cat "$tmp/err")"
done
for m in concat_big:"overflows 64 bits" pad_big:"overflows dimension" s2d:"blocksize must be" range_i64:"too large" \
         range_inf:"too large" split_neg:"negative" add_no_inputs:"it has no inputs"; do
  rc=0; timeout 20 "$CLI" plan "$tmp/h_${m%%:*}.onnx" -q --allow-dynamic 2>"$tmp/err" || rc=$?
  [ "$rc" = 2 ] || bad "${m%%:*}: exit $rc, expected 2: $(cat "$tmp/err")"
  grep -q "${m#*:}" "$tmp/err" || bad "${m%%:*}: message: $(cat "$tmp/err")"
done
for f in "$tmp"/h_*.onnx; do
  rc=0; timeout 20 "$CLI" plan "$f" -q --allow-dynamic 2>"$tmp/err" || rc=$?
  case $rc in 0|2) ;; *) bad "$(basename "$f"): exit $rc (a crash or a hang): $(cat "$tmp/err")";; esac
done
# an integer Range in exact arithmetic: Range(INT64_MIN, 1, INT64_MAX) has 2 elements
"$CLI" plan "$tmp/h_range_exact.onnx" -q -o "$tmp/re.json" 2>"$tmp/err" || bad "range_exact: $(cat "$tmp/err")"
python3 -c 'import json,sys; t={x["name"]: x for x in json.load(open(sys.argv[1]))["tensors"]}; assert t["r"]["bytes"] == 16, t["r"]' "$tmp/re.json" ||
  bad "range_exact: Range(INT64_MIN, 1, INT64_MAX) should have 2 int64 elements (16 bytes)"
for m in pow_loop cast_big cast_nan; do
  rc=0; timeout 20 "$CLI" plan "$tmp/$m.onnx" -q --allow-dynamic 2>"$tmp/err" || rc=$?
  case $rc in 0|2) ;; *) bad "$m: exit $rc (a crash or a hang): $(cat "$tmp/err")";; esac
done
exit $fail
