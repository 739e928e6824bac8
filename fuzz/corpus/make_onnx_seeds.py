#!/usr/bin/python3
"""Writes the hand-made seed models of fuzz/corpus/fuzz_onnx_struct/: one
tiny model per op family whose shape arithmetic the structure-aware fuzzer
mutates (dims, attributes, initializer values).  Run with Debian's python3
(python3-onnx): /usr/bin/python3 fuzz/corpus/make_onnx_seeds.py"""
import os
import sys

from onnx import TensorProto, helper, numpy_helper
import numpy as np

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def model(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
                          [numpy_helper.from_array(np.array(v, dtype=d), n) for n, v, d in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="seed")


N = helper.make_node
seeds = {
    "conv": model("conv", [N("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], strides=[1, 1], dilations=[1, 1])],
                  [("x", F, [1, 2, 5, 5])], [("y", F, None)], [("w", np.ones((3, 2, 3, 3)), np.float32)]),
    "convtranspose": model("ct", [N("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], pads=[0, 0, 0, 0])],
                           [("x", F, [1, 2, 3, 3])], [("y", F, None)], [("w", np.ones((2, 1, 2, 2)), np.float32)]),
    "pool": model("pool", [N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0])],
                  [("x", F, [1, 1, 4, 4])], [("y", F, None)]),
    "concat": model("concat", [N("Concat", ["a", "b"], ["y"], axis=0)], [("a", B, [2]), ("b", B, [3])], [("y", B, None)]),
    "slice": model("slice", [N("Slice", ["x", "s", "e", "ax", "st"], ["y"])], [("x", F, [8, 4])], [("y", F, None)],
                   [("s", [1], np.int64), ("e", [7], np.int64), ("ax", [0], np.int64), ("st", [2], np.int64)]),
    "pad": model("pad", [N("Pad", ["x", "p"], ["y"])], [("x", F, [2, 3])], [("y", F, None)], [("p", [1, 0, 1, 2], np.int64)]),
    "resize": model("resize", [N("Resize", ["x", "", "sc"], ["y"])], [("x", F, [1, 1, 2, 2])], [("y", F, None)],
                    [("sc", [1, 1, 2, 2], np.float32)]),
    "range": model("range", [N("Range", ["s", "l", "d"], ["y"]), N("Add", ["y", "y"], ["z"])], [], [("z", F, None)],
                   [("s", 0, np.float32), ("l", 10, np.float32), ("d", 1, np.float32)]),
    "range_int": model("range_i", [N("Range", ["s", "l", "d"], ["y"]), N("Mul", ["y", "y"], ["z"])], [], [("z", I64, None)],
                       [("s", 0, np.int64), ("l", 6, np.int64), ("d", 2, np.int64)]),
    "onehot": model("onehot", [N("OneHot", ["i", "d", "v"], ["y"])], [("i", I64, [3])], [("y", F, None)],
                    [("d", [4], np.int64), ("v", [0, 1], np.float32)]),
    "split": model("split", [N("Split", ["x", "sp"], ["a", "b"], axis=0)], [("x", F, [10, 2])], [("a", F, None), ("b", F, None)],
                   [("sp", [4, 6], np.int64)]),
    "space_to_depth": model("s2d", [N("SpaceToDepth", ["x"], ["y"], blocksize=2)], [("x", F, [1, 1, 4, 4])], [("y", F, None)]),
    "pow": model("pow", [N("Pow", ["b", "e"], ["y"]), N("Add", ["y", "x"], ["z"])], [("x", I64, [1])], [("z", I64, None)],
                 [("b", [2], np.int64), ("e", [3], np.int64)]),
    "add_fold": model("addf", [N("Add", ["a", "b"], ["c"]), N("Reshape", ["x", "c"], ["y"])], [("x", F, [2, 3])], [("y", F, None)],
                      [("a", [3, 1], np.int64), ("b", [0, 1], np.int64)]),
    "expand_tile": model("et", [N("Expand", ["x", "s"], ["y"]), N("Tile", ["y", "r"], ["z"])], [("x", F, [1, 3])], [("z", F, None)],
                         [("s", [2, 3], np.int64), ("r", [1, 2], np.int64)]),
    "gather_transpose": model("gt", [N("Gather", ["x", "i"], ["y"], axis=1), N("Transpose", ["y"], ["z"], perm=[1, 0])],
                              [("x", F, [2, 5])], [("z", F, None)], [("i", [0, 4], np.int64)]),
    "constant_of_shape": model("cos", [N("ConstantOfShape", ["s"], ["y"]), N("Relu", ["y"], ["z"])], [], [("z", F, None)],
                               [("s", [2, 3], np.int64)]),
    "symbolic": model("sym", [N("Unsqueeze", ["x", "ax"], ["y"]), N("Flatten", ["y"], ["z"], axis=1)], [("x", F, ["N", 4])],
                      [("z", F, None)], [("ax", [0], np.int64)]),
}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_onnx_struct")
os.makedirs(out, exist_ok=True)
for name, m in seeds.items():
    with open(os.path.join(out, "seed-" + name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())
print(f"{len(seeds)} seeds in {out}", file=sys.stderr)
