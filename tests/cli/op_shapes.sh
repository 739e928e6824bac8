#!/usr/bin/env bash
# --op-shapes FILE and the built-in com.microsoft shapes: a custom op shaped
# by formulas in plan, report, viz, run and verify; node entries before
# op-type entries; com.microsoft ops (as ONNX Runtime's optimisers write
# them) planned with hand-computed output sizes (the plan's tensor bytes);
# bad files (a malformed formula with its entry and column, an unknown key)
# and formulas that fail at import (division by zero, a negative size, an
# input the node lacks) exit 2 naming what is wrong.  Models are written
# with python3-onnx at run time.
. "$(dirname "$0")/harness.bash"
PY=""
for p in /usr/bin/python3 python3; do "$p" -c "import onnx, numpy" 2>/dev/null && { PY=$p; break; }; done
[ -n "$PY" ] || { echo "SKIP: python3-onnx is not installed"; exit 0; }
"$CLI" plan --help | grep -q -- "--op-shapes" || { bad "plan --help does not list --op-shapes"; }

"$PY" - "$tmp" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper, TensorProto as T, numpy_helper
d = sys.argv[1]
def vi(name, t, shape): return helper.make_tensor_value_info(name, t, shape)
def out(name): return helper.make_empty_tensor_value_info(name)
def init(name, shape, dt=np.float32, val=None):
    a = np.zeros(shape, dtype=dt) if val is None else np.array(val, dtype=dt)
    return numpy_helper.from_array(a, name)
def save(name, nodes, ins, outs, inits=(), ms=True, extra=()):
    g = helper.make_graph(nodes, name, ins, [out(o) for o in outs], initializer=list(inits))
    ops = [helper.make_opsetid("", 17)] + ([helper.make_opsetid("com.microsoft", 1)] if ms else []) + list(extra)
    onnx.save(helper.make_model(g, opset_imports=ops), f"{d}/{name}.onnx")
MS = "com.microsoft"
# a custom op of com.example: x[2,3,32,32] -> MyConv(filters 16, pad 1, k 3, stride 2) -> c -> Relu -> y,
# and a second MyConv named "special" shaped by its node entry
save("custom", [helper.make_node("MyConv", ["x"], ["c"], name="myconv", domain="com.example", filters=16, pad=1, k=3, stride=2),
                helper.make_node("Relu", ["c"], ["r"], name="relu"),
                helper.make_node("MyConv", ["r"], ["y"], name="special", domain="com.example", filters=4, k=1, stride=1)],
     [vi("x", T.FLOAT, [2, 3, 32, 32])], ["y"], ms=False, extra=[helper.make_opsetid("com.example", 1)])
# the com.microsoft ops, one model each; outputs are graph outputs with no declared type
x4 = vi("x", T.FLOAT, [1, 3, 16, 16])
save("fused_conv", [helper.make_node("FusedConv", ["x", "w"], ["y"], domain=MS, pads=[1, 1, 1, 1], strides=[2, 2], activation="Relu")],
     [x4], ["y"], [init("w", [8, 3, 3, 3])])
save("nhwc_conv", [helper.make_node("NhwcConv", ["x", "w"], ["y"], domain=MS, pads=[1, 1, 1, 1])],
     [vi("x", T.FLOAT, [1, 16, 16, 3])], ["y"], [init("w", [8, 3, 3, 3])])
save("fused_gemm", [helper.make_node("FusedGemm", ["a", "b"], ["y"], domain=MS, transB=1, activation="Relu")],
     [vi("a", T.FLOAT, [4, 6])], ["y"], [init("b", [5, 6])])
save("fused_matmul", [helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain=MS, transB=1, alpha=0.5)],
     [vi("a", T.FLOAT, [2, 3, 4]), vi("b", T.FLOAT, [2, 5, 4])], ["y"])
save("fused_matmul_tb", [helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain=MS, transBatchA=1)],
     [vi("a", T.FLOAT, [3, 2, 4]), vi("b", T.FLOAT, [2, 4, 5])], ["y"])
for op in ["QuickGelu", "Gelu", "FastGelu"]:
    save(op.lower(), [helper.make_node(op, ["x"], ["y"], domain=MS)], [vi("x", T.FLOAT, [2, 3, 4])], ["y"])
save("bias_gelu", [helper.make_node("BiasGelu", ["x", "b"], ["y"], domain=MS)], [vi("x", T.FLOAT16, [2, 3, 8])], ["y"],
     [init("b", [8], np.float16)])
save("skip_ln", [helper.make_node("SkipLayerNormalization", ["x", "s", "g", "b"], ["y", "mean", "inv", "sum"], domain=MS, epsilon=1e-5)],
     [vi("x", T.FLOAT, [2, 5, 8]), vi("s", T.FLOAT, [2, 5, 8])], ["y", "mean", "inv", "sum"], [init("g", [8]), init("b", [8])])
save("skip_sln", [helper.make_node("SkipSimplifiedLayerNormalization", ["x", "s", "g"], ["y", "", "", "sum"], domain=MS)],
     [vi("x", T.FLOAT16, [2, 5, 8]), vi("s", T.FLOAT16, [2, 5, 8])], ["y", "sum"], [init("g", [8], np.float16)])
save("sln", [helper.make_node("SimplifiedLayerNormalization", ["x", "g"], ["y", "inv"], axis=-1)],
     [vi("x", T.FLOAT, [2, 5, 8])], ["y", "inv"], [init("g", [8])])
save("embed_ln", [helper.make_node("EmbedLayerNormalization", ["ids", "seg", "we", "pe", "se", "g", "b"], ["y", "mask"], domain=MS)],
     [vi("ids", T.INT32, [2, 7]), vi("seg", T.INT32, [2, 7])], ["y", "mask"],
     [init("we", [100, 16]), init("pe", [64, 16]), init("se", [2, 16]), init("g", [16]), init("b", [16])])
save("attention", [helper.make_node("Attention", ["x", "w", "bias"], ["y", "present"], domain=MS, num_heads=4)],
     [vi("x", T.FLOAT, [2, 7, 16])], ["y", "present"], [init("w", [16, 48]), init("bias", [48])])
save("mha", [helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["y"], domain=MS, num_heads=4)],
     [vi("q", T.FLOAT, [2, 7, 16]), vi("k", T.FLOAT, [2, 9, 16]), vi("v", T.FLOAT, [2, 9, 24])], ["y"])
save("gqa", [helper.make_node("GroupQueryAttention", ["q", "k", "v", "pk", "pv", "seqlens", "total"], ["y", "present_k", "present_v"],
                              domain=MS, num_heads=4, kv_num_heads=2)],
     [vi("q", T.FLOAT16, [1, 5, 32]), vi("k", T.FLOAT16, [1, 5, 16]), vi("v", T.FLOAT16, [1, 5, 16]),
      vi("pk", T.FLOAT16, [1, 2, 10, 8]), vi("pv", T.FLOAT16, [1, 2, 10, 8]), vi("seqlens", T.INT32, [1])],
     ["y", "present_k", "present_v"], [init("total", [], np.int32, 15)])
save("rotary", [helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS)],
     [vi("x", T.FLOAT, [1, 5, 32]), vi("pos", T.INT64, [1, 5])], ["y"], [init("cos", [16, 8]), init("sin", [16, 8])])
save("matmul_nbits", [helper.make_node("MatMulNBits", ["a", "b", "scales"], ["y"], domain=MS, K=64, N=32, bits=4, block_size=32)],
     [vi("a", T.FLOAT, [2, 3, 64])], ["y"], [init("b", [32, 2, 16], np.uint8), init("scales", [64])])
q = lambda n: [init(n + "_s", [], np.float32, 0.1), init(n + "_z", [], np.uint8, 128)]
save("qlinear_add", [helper.make_node("QLinearAdd", ["a", "a_s", "a_z", "b", "b_s", "b_z", "c_s", "c_z"], ["y"], domain=MS)],
     [vi("a", T.UINT8, [1, 4, 4]), vi("b", T.UINT8, [4])], ["y"], q("a") + q("b") + q("c"))
save("qlinear_gap", [helper.make_node("QLinearGlobalAveragePool", ["x", "x_s", "x_z", "y_s", "y_z"], ["y"], domain=MS, channels_last=1)],
     [vi("x", T.UINT8, [1, 5, 5, 8])], ["y"], q("x") + q("y"))
save("qlinear_avgpool", [helper.make_node("QLinearAveragePool", ["x", "x_s", "x_z", "y_s", "y_z"], ["y"], domain=MS, kernel_shape=[2, 2], strides=[2, 2])],
     [vi("x", T.UINT8, [1, 8, 6, 6])], ["y"], q("x") + q("y"))
save("quantize", [helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["y"], domain=MS)],
     [vi("x", T.FLOAT, [2, 4])], ["y"], q("x"))
save("bias_softmax", [helper.make_node("BiasSoftmax", ["x", "b"], ["y"], domain=MS, axis=-1)],
     [vi("x", T.FLOAT, [2, 4, 6]), vi("b", T.FLOAT, [2, 4, 6])], ["y"])
save("qlinear_conv_nhwc", [helper.make_node("QLinearConv", ["x", "x_s", "x_z", "w", "w_s", "w_z", "y_s", "y_z"], ["y"], domain=MS,
                                             channels_last=1, pads=[1, 1, 1, 1])],
     [vi("x", T.UINT8, [1, 8, 8, 3])], ["y"], q("x") + [init("w", [4, 3, 3, 3], np.uint8)] + q("w") + q("y"))
save("qlinear_concat", [helper.make_node("QLinearConcat", ["y_s", "y_z", "a", "a_s", "a_z", "b", "b_s", "b_z"], ["y"], domain=MS, axis=1)],
     [vi("a", T.UINT8, [1, 2, 4]), vi("b", T.UINT8, [1, 3, 4])], ["y"], q("y") + q("a") + q("b"))
save("qgemm", [helper.make_node("QGemm", ["a", "a_s", "a_z", "b", "b_s", "b_z", "", "y_s", "y_z"], ["y"], domain=MS)],
     [vi("a", T.UINT8, [4, 6])], ["y"], q("a") + [init("b", [6, 5], np.uint8)] + q("b") + q("y"))
save("matmul_int_to_float", [helper.make_node("MatMulIntegerToFloat", ["a", "b", "a_s", "b_s"], ["y"], domain=MS)],
     [vi("a", T.UINT8, [3, 4])], ["y"], [init("b", [4, 5], np.int8), init("a_s", [], np.float32, 0.1), init("b_s", [], np.float32, 0.1)])
save("bias_split_gelu", [helper.make_node("BiasSplitGelu", ["x", "b"], ["y"], domain=MS)],
     [vi("x", T.FLOAT16, [2, 16, 64])], ["y"], [init("b", [64], np.float16)])
save("skip_group_norm", [helper.make_node("SkipGroupNorm", ["x", "g", "b", "s"], ["y", "sum"], domain=MS, groups=2, epsilon=1e-5, activation=0)],
     [vi("x", T.FLOAT16, [1, 4, 4, 8]), vi("s", T.FLOAT16, [1, 4, 4, 8])], ["y", "sum"], [init("g", [8]), init("b", [8])])
save("mha_packed", [helper.make_node("MultiHeadAttention", ["q"], ["y"], domain=MS, num_heads=4)],
     [vi("q", T.FLOAT, [2, 7, 4, 3, 8])], ["y"])
save("mha_past", [helper.make_node("MultiHeadAttention", ["q", "k", "v", "", "", "", "pk", "pv"], ["y", "present_k", "present_v"], domain=MS, num_heads=4)],
     [vi("q", T.FLOAT, [1, 1, 16]), vi("k", T.FLOAT, [1, 1, 16]), vi("v", T.FLOAT, [1, 1, 16]),
      vi("pk", T.FLOAT, [1, 4, 5, 4]), vi("pv", T.FLOAT, [1, 4, 5, 4])], ["y", "present_k", "present_v"])
save("gqa_packed", [helper.make_node("GroupQueryAttention", ["q", "", "", "", "", "seqlens", "total"], ["y", "present_k", "present_v"],
                                     domain=MS, num_heads=4, kv_num_heads=2)],
     [vi("q", T.FLOAT16, [1, 6, 64]), vi("seqlens", T.INT32, [1])], ["y", "present_k", "present_v"], [init("total", [], np.int32, 6)])
save("attention_past", [helper.make_node("Attention", ["x", "w", "bias", "", "past"], ["y", "present"], domain=MS, num_heads=2)],
     [vi("x", T.FLOAT, [2, 1, 16]), vi("past", T.FLOAT, [2, 2, 2, 3, 8])], ["y", "present"], [init("w", [16, 48]), init("bias", [48])])
# not imported: a com.microsoft op in a model whose opset_import lacks the domain
save("no_ms", [helper.make_node("FastGelu", ["x"], ["y"], domain=MS)], [vi("x", T.FLOAT, [2, 3])], ["y"], ms=False)
PYEOF

# ---- a custom op through --op-shapes
cat >"$tmp/ops.json" <<'EOF'
{"ops": [
  {"domain": "com.example", "op_type": "MyConv", "attrs": {"pad": 0},
   "outputs": [{"dtype": "in0", "shape": ["in0[0]", "attr.filters", "(in0[2] + 2*attr.pad - attr.k) / attr.stride + 1", "ceil_div(in0[-1] - attr.k + 2*attr.pad + 1, attr.stride)"]}]},
  {"node": "special", "outputs": [{"dtype": "f16", "shape": ["in0[0]", "attr.filters", "in0[2] * 2", "max(in0[3], 20)"]}]}
]}
EOF
expect_msg 2 'unknown op type "MyConv" of domain "com.example"' "$CLI" plan "$tmp/custom.onnx"
"$CLI" plan "$tmp/custom.onnx" --op-shapes "$tmp/ops.json" -o "$tmp/p.json" >"$tmp/plan.out" 2>&1 || bad "plan --op-shapes: $(cat "$tmp/plan.out")"
# c = [2,16,16,16] f32, y = [2,4,32,20] f16 (node entry, not the op-type one)
bytes_of() { "$PY" -c 'import json,sys; t={x["name"]: x["bytes"] for x in json.load(open(sys.argv[1]))["tensors"]}; print(" ".join(str(t.get(n, "none")) for n in sys.argv[2:]))' "$@"; }
got=$(bytes_of "$tmp/p.json" c r y)
[ "$got" = "32768 32768 10240" ] || bad "custom op bytes: $got, want 32768 32768 10240"
expect_msg 0 "the plan is sound" "$CLI" verify "$tmp/custom.onnx" "$tmp/p.json" --op-shapes "$tmp/ops.json"
expect_msg 0 "bestfit" "$CLI" report "$tmp/custom.onnx" --op-shapes "$tmp/ops.json" --time-limit 0.2
expect_msg 0 "" "$CLI" viz "$tmp/custom.onnx" --op-shapes "$tmp/ops.json" -o "$tmp/v.svg"
[ -s "$tmp/v.svg" ] || bad "viz --op-shapes wrote no picture"
expect_msg 0 "" "$CLI" run "$tmp/custom.onnx" --op-shapes "$tmp/ops.json" --verify

# ---- the com.microsoft ops: tensor bytes from hand-computed shapes
check_ms() { # check_ms MODEL "TENSOR..." "BYTES..."
  local m=$1 names=$2 want=$3
  if ! "$CLI" plan "$tmp/$m.onnx" -o "$tmp/$m.json" >"$tmp/$m.out" 2>&1; then bad "$m: plan failed: $(cat "$tmp/$m.out")"; return; fi
  local got
  got=$(bytes_of "$tmp/$m.json" $names)
  [ "$got" = "$want" ] || bad "$m: bytes of $names are $got, want $want"
}
check_ms fused_conv y 2048                      # [1,8,8,8] f32: (16 + 2 - 3) / 2 + 1 = 8
check_ms nhwc_conv y 8192                       # [1,16,16,8] f32
check_ms fused_gemm y 80                        # [4,5] f32 (transB)
check_ms fused_matmul y 120                     # [2,3,5] f32
check_ms fused_matmul_tb y 120                  # transBatchA: [3,2,4] -> [2,3,4]; x [2,4,5] = [2,3,5]
check_ms quickgelu y 96                         # [2,3,4] f32
check_ms gelu y 96
check_ms fastgelu y 96
check_ms bias_gelu y 96                         # [2,3,8] f16
check_ms skip_ln "y mean inv sum" "320 40 40 320"   # [2,5,8], [2,5,1] x2, [2,5,8]
check_ms skip_sln "y sum" "160 160"             # f16
check_ms sln "y inv" "320 40"                   # default domain, with com.microsoft imported
check_ms embed_ln "y mask" "896 8"              # [2,7,16] f32, [2] i32
check_ms attention "y present" "896 1792"       # [2,7,16]; present [2,2,4,7,4]
check_ms mha y 1344                             # [2,7,24]
check_ms gqa "y present_k present_v" "320 480 480"  # [1,5,32] f16; present [1,2,max(10,15),8]
check_ms rotary y 640                           # [1,5,32]
check_ms matmul_nbits y 768                     # [2,3,32] f32
check_ms qlinear_add y 16                       # [1,4,4] u8
check_ms qlinear_gap y 8                        # channels last: [1,1,1,8] u8
check_ms qlinear_avgpool y 72                   # [1,8,3,3] u8
check_ms quantize y 8                           # [2,4] u8
check_ms bias_softmax y 192                     # [2,4,6]
check_ms qlinear_conv_nhwc y 256                # channels last: [1,8,8,4] u8
check_ms qlinear_concat y 20                    # [1,5,4] u8
check_ms qgemm y 20                             # [4,5] u8 (y_zero_point's type)
check_ms matmul_int_to_float y 60               # [3,5] f32 (a_scale's type)
check_ms bias_split_gelu y 2048                 # [2,16,32] f16
check_ms skip_group_norm "y sum" "256 256"      # [1,4,4,8] f16
check_ms mha_packed y 1792                      # packed QKV [2,7,4,3,8]: [2,7,32]
check_ms mha_past "y present_k present_v" "64 384 384"   # present [1,4,5+1,4]
check_ms gqa_packed "y present_k present_v" "384 192 192"  # H = 64 / (4 + 2*2) = 8: [1,6,32]; present [1,2,6,8]
check_ms attention_past "y present" "128 1024"  # present [2,2,2,3+1,8]
expect_msg 2 'domain "com.microsoft" is not in the model' "$CLI" plan "$tmp/no_ms.onnx"

# ---- bad files: exit 2 with the file, the entry, the column or the key
printf '{"ops": [{"op_type": "MyConv", "outputs": [{"shape": ["in0[0]", "(in0[1] + 2"]}]}]}' >"$tmp/b1.json"
expect_msg 2 'b1.json: ops[0].outputs[0].shape[1]: column 12: expected' "$CLI" plan "$tmp/custom.onnx" --op-shapes "$tmp/b1.json"
printf '{"ops": [{"op_type": "MyConv", "output": []}]}' >"$tmp/b2.json"
expect_msg 2 'b2.json: ops[0]: unknown key "output"' "$CLI" plan "$tmp/custom.onnx" --op-shapes "$tmp/b2.json"
printf '{"ops": [], "version": 2}' >"$tmp/b3.json"
expect_msg 2 'unknown key "version"' "$CLI" report "$tmp/custom.onnx" --op-shapes "$tmp/b3.json"
printf '{"ops": [{"op_type": "MyConv", "outputs": [{"shape": ["in0[0] / (attr.k - 3)"]}]}]}' >"$tmp/b4.json"
expect_msg 2 'node "myconv" (MyConv): ' "$CLI" plan "$tmp/custom.onnx" --op-shapes "$tmp/b4.json"
expect_msg 2 'division by zero' "$CLI" plan "$tmp/custom.onnx" --op-shapes "$tmp/b4.json"
printf '{"ops": [{"op_type": "MyConv", "outputs": [{"shape": ["in0[1] - attr.filters"]}]}]}' >"$tmp/b5.json"
expect_msg 2 'formula "in0[1] - attr.filters" gives -13, a negative size' "$CLI" plan "$tmp/custom.onnx" --op-shapes "$tmp/b5.json"
printf '{"ops": [{"op_type": "MyConv", "outputs": [{"shape": ["in1[0]"]}]}]}' >"$tmp/b6.json"
expect_msg 2 'the node has no input 1' "$CLI" viz "$tmp/custom.onnx" --op-shapes "$tmp/b6.json" -o "$tmp/v2.svg"
expect_msg 2 'nope.json' "$CLI" plan "$tmp/custom.onnx" --op-shapes "$tmp/nope.json"
printf '{"ops": [{"op_type": "MyConv",\n  "outputs": [}]}' >"$tmp/b7.json"
expect_msg 2 'b7.json:2:' "$CLI" plan "$tmp/custom.onnx" --op-shapes "$tmp/b7.json"
"$CLI" gen chain -o "$tmp/g.json" >/dev/null 2>&1 || bad "gen chain"
expect_msg 2 'op shapes apply to ONNX models' "$CLI" plan "$tmp/g.json" --op-shapes "$tmp/ops.json"
expect_msg 2 '--op-shapes needs a value' "$CLI" plan "$tmp/custom.onnx" --op-shapes
exit $fail
