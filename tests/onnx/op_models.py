#!/usr/bin/env python3
"""One small model per ai.onnx operator, with hand-computed output shapes, for tests/onnx/test_onnx_ops.c.

usage: op_models.py OUTDIR [INFER_C]

Writes OUTDIR/<case>.onnx and OUTDIR/cases.json:
  [{"name", "file", "op", "opset", "err": words | null,
    "outputs": [{"name", "expect": {"dtype": onnx type, "shape": [dim]} | "dyn"}],
    "onnx": {name: {"elem_type", "shape": [int | str | null] | null}} | null}]
A dim is a number, "?" (any symbol: a size bufplan cannot know) or a
dim_param name.  "dyn" is an output without a byte size or rank (strings,
sequences): planned as a dynamic tensor.  Each case's model imports opset 22
(the newest bufplan knows) unless it tests an older version's form; onnx 1.12
writes them without checking.  Cases at opset <= 17 also get onnx 1.12's own
shape inference ("onnx"), and so do copies at opsets 17, 13, 11 and 7 of
every opset-22 case whose node onnx's checker accepts there (the op's form
is the same; the expected shapes too): bufplan must agree with both.  With
INFER_C (src/onnx/infer.c), every op type of its dispatch table must have a
case at opset 22 (or, for an op removed earlier, at its last version).
Exit status 3 when onnx or numpy cannot be imported.
"""
import json
import os
import re
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto as TP
    from onnx import helper, numpy_helper, shape_inference
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import onnx_oracle
except Exception as e:  # the caller skips
    print("op_models: cannot import onnx / numpy: %s" % e, file=sys.stderr)
    sys.exit(3)

F, D, H, I32, I64, U8, I8, B, S = TP.FLOAT, TP.DOUBLE, TP.FLOAT16, TP.INT32, TP.INT64, TP.UINT8, TP.INT8, TP.BOOL, TP.STRING
F8E4M3FN, INT4 = 17, 22
NEWEST = 22
LAST = {"Upsample": 10, "Scatter": 11}  # removed (deprecated) before 22
DYN = "dyn"
OLD_COPIES = (17, 13, 11, 7)  # opsets of the copies compared with onnx 1.12


def I(*shape, dt=F):
    """A graph input of this shape (ints or dim_param names)."""
    return ("in", dt, list(shape))


def C(v, dt=None):
    """An initializer."""
    a = np.array(v, dtype=dt) if dt is not None else np.array(v)
    if a.dtype == np.float64 and dt is None:
        a = a.astype(np.float32)
    return ("init", a)


def O(dt, *shape):
    return {"dtype": dt, "shape": list(shape)}


CASES = []


def case(op, ins, outs, opset=NEWEST, err=None, tag="", pre=(), ins0=None, no_old=False, no_onnx=False, **attrs):
    """A case: op with inputs `ins` (I, C, None = omitted, or a name that `pre` nodes produce from the graph
    inputs `ins0`), the expected outputs, and the node's attributes.  no_old: no copies at older opsets; no_onnx: onnx
    1.12's inference is not compared (each use says why)."""
    CASES.append(dict(op=op, ins=ins, outs=outs, opset=opset, err=err, tag=tag, pre=list(pre), ins0=ins0, no_old=no_old,
                      no_onnx=no_onnx, attrs=attrs))


# ---------------------------------------------------------------- element-wise
for op in ["Add", "Sub", "Mul", "Div", "Pow", "Min", "Max", "Sum", "Mean"]:
    case(op, [I(2, 3, 4), I(3, 1)], [O(F, 2, 3, 4)])
case("Max", [I(2, 1), I(1, 3), I(4, 1, 1)], [O(F, 4, 2, 3)], tag="3in", no_old=True)  # no broadcasting before 8
case("Add", [I("N", 3), I(1, 3)], [O(F, "N", 3)], tag="sym")
case("Mod", [I(4, dt=I32), I(4, dt=I32)], [O(I32, 4)])
for op in ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]:
    case(op, [I(2, 3), I(3)], [O(B, 2, 3)])
for op in ["And", "Or", "Xor"]:
    case(op, [I(2, 3, dt=B), I(2, 1, dt=B)], [O(B, 2, 3)])
for op in ["BitwiseAnd", "BitwiseOr", "BitwiseXor"]:
    case(op, [I(5, dt=I32), I(1, dt=I32)], [O(I32, 5)])
case("BitShift", [I(3, dt=U8), I(3, dt=U8)], [O(U8, 3)], direction="LEFT")
case("Where", [I(2, 1, dt=B), I(1, 3), I(2, 3)], [O(F, 2, 3)])
UNARY = ["Relu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "Sqrt", "Exp", "Log", "Neg", "Abs",
         "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Elu", "Selu", "Celu", "Softplus", "Softsign", "Mish",
         "ThresholdedRelu", "Shrink", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
         "Atanh", "Softmax", "LogSoftmax", "Hardmax", "MeanVarianceNormalization", "LpNormalization", "Identity"]
for op in UNARY:
    case(op, [I(2, 3, 4, 5)], [O(F, 2, 3, 4, 5)])
case("LeakyRelu", [I(2, 3)], [O(F, 2, 3)], alpha=0.2)
case("Gelu", [I(2, 3)], [O(F, 2, 3)], approximate="tanh")
case("PRelu", [I(2, 3, 4), I(4)], [O(F, 2, 3, 4)])
case("Clip", [I(2, 3), C(np.float32(0)), C(np.float32(6))], [O(F, 2, 3)])
case("Clip", [I(2, 3)], [O(F, 2, 3)], opset=6, tag="attr", min=0.0, max=6.0)
case("Not", [I(2, 3, dt=B)], [O(B, 2, 3)])
case("BitwiseNot", [I(4, dt=I32)], [O(I32, 4)])
case("IsNaN", [I(2, 3)], [O(B, 2, 3)])
case("IsInf", [I(2, 3)], [O(B, 2, 3)], detect_negative=0)
case("LRN", [I(1, 3, 4, 4)], [O(F, 1, 3, 4, 4)], size=3)
case("CumSum", [I(3, 4), C(np.int64(1))], [O(F, 3, 4)])
case("Trilu", [I(3, 4)], [O(F, 3, 4)], upper=0)
case("ReverseSequence", [I(4, 2, 3), C([4, 2], np.int64)], [O(F, 4, 2, 3)], batch_axis=1, time_axis=0)
case("Bernoulli", [I(2, 3)], [O(D, 2, 3)], dtype=D)
case("Bernoulli", [I(2, 3, dt=D)], [O(D, 2, 3)], tag="nodtype")
case("Dropout", [I(2, 3)], [O(F, 2, 3), O(B, 2, 3)], no_old=True)
case("Dropout", [I(2, 3)], [O(F, 2, 3), DYN], tag="7", opset=7)  # mask of the input's type, no shape (as onnx 1.12)
case("Dropout", [I(2, 3), C(np.float32(0.5)), C(np.bool_(True))], [O(F, 2, 3), O(B, 2, 3)], tag="train")
case("Cast", [I(2, 3)], [O(I64, 2, 3)], to=I64)
case("Cast", [I(2, 3)], [O(F8E4M3FN, 2, 3)], tag="f8", to=F8E4M3FN, saturate=0)
case("Cast", [I(2, 3)], [DYN], tag="int4", to=INT4)
case("Cast", [I(2, 3)], [DYN], tag="string", to=S)
case("CastLike", [I(2, 3), I(1, dt=D)], [O(D, 2, 3)])
case("Cast", [I(2, 3)], [O(I64, 2, 3)], tag="1", opset=1, to="INT64")
case("Add", [I(2, 3, 4, 5), I(3, 4)], [O(F, 2, 3, 4, 5)], tag="legacy", opset=6, broadcast=1, axis=1)
case("Mul", [I(2, 3, 4, 5), I(5)], [O(F, 2, 3, 4, 5)], tag="legacy", opset=1, broadcast=1)
case("Equal", [I(2, 3), I(3, dt=F)], [O(B, 2, 3)], tag="legacy", opset=1, broadcast=1)

# ---------------------------------------------------------------- reductions
for op in ["ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
           "ReduceLogSumExp", "ReduceSumSquare", "ReduceSum"]:
    case(op, [I(2, 3, 4), C([1], np.int64)], [O(F, 2, 1, 4)])
    case(op, [I(2, 3, 4)], [O(F, 2, 3, 4)], tag="noop", noop_with_empty_axes=1)
    case(op, [I(2, 3, 4)], [O(F)], tag="all", keepdims=0)
    case(op, [I(2, 3, 4)], [O(F, 3)], opset=13 if op != "ReduceSum" else 12, tag="attr", axes=[0, -1], keepdims=0)
case("ReduceSum", [I(2, 3, 4), C([0, 2], np.int64)], [O(F, 3)], opset=13, tag="in13", keepdims=0)
case("ReduceMean", [I(2, 3, 4), C([], np.int64)], [O(F, 1, 1, 1)], tag="empty")
case("ReduceMax", [I(2, 3, 4), I(1, dt=I64)], [O(F, "?", "?", "?")], tag="unknown")
case("ArgMax", [I(2, 3, 4)], [O(I64, 2, 4)], axis=1, keepdims=0)
case("ArgMin", [I(2, 3, 4)], [O(I64, 2, 3, 1)], axis=-1, select_last_index=1)

# ---------------------------------------------------------------- constants, shapes
case("Shape", [I(2, 3, 4)], [O(I64, 3)])
case("Shape", [I(2, 3, 4)], [O(I64, 1)], tag="startend", start=1, end=-1)
case("Shape", [I(2, 3, 4)], [O(I64, 2)], tag="start", opset=15, start=-2)
case("Size", [I(2, 3, 4)], [O(I64)])
case("Constant", [], [O(F, 2, 3)], value=numpy_helper.from_array(np.zeros((2, 3), np.float32), "v"))
case("Constant", [], [O(I64, 3)], tag="ints", value_ints=[1, 2, 3])
case("Constant", [], [O(F)], tag="float", value_float=1.5)
case("Constant", [], [DYN], tag="string", value_string="abc")
case("ConstantOfShape", [C([2, 3], np.int64)], [O(I32, 2, 3)], value=helper.make_tensor("v", I32, [1], [7]))
case("ConstantOfShape", [C([4], np.int64)], [O(F, 4)], tag="default")
case("Range", [C(np.int64(0)), C(np.int64(10)), C(np.int64(3))], [O(I64, 4)])
case("Range", [C(np.float32(0)), C(np.float32(1)), C(np.float32(0.25))], [O(F, 4)], tag="float")
case("Range", [I(dt=I64), C(np.int64(10)), C(np.int64(1))], [O(I64, "?")], tag="unknown")
case("RandomNormal", [], [O(F, 2, 3)], shape=[2, 3])
case("RandomUniform", [], [O(D, 4)], shape=[4], dtype=D)
case("RandomNormalLike", [I(2, 3)], [O(F, 2, 3)])
case("RandomUniformLike", [I(2, 3)], [O(D, 2, 3)], dtype=D)
case("EyeLike", [I(3, 4)], [O(I32, 3, 4)], dtype=I32)
case("Multinomial", [I(4, 10)], [O(I32, 4, 3)], sample_size=3)
case("Multinomial", [I(4, 10)], [O(I64, 4, 1)], tag="i64", dtype=I64)

# ---------------------------------------------------------------- reshaping
case("Reshape", [I(2, 3, 4), C([4, -1], np.int64)], [O(F, 4, 6)])
case("Reshape", [I(2, 3, 4), C([0, -1], np.int64)], [O(F, 2, 12)], tag="zero")
case("Reshape", [I(2, 0, 3), C([0, 5], np.int64)], [O(F, 0, 5)], tag="allowzero", allowzero=1)
case("Reshape", [I(2, 3, 4), C([0, -1], np.int64)], [O(F, 2, 12)], opset=13, tag="13")
case("Reshape", [I("N", 512, 1, 1), C([0, -1], np.int64)], [O(F, "N", 512)], tag="sym")
case("Reshape", [I(2, 3), C([4, -1], np.int64)], [], tag="bad", err="cannot reshape 6 elements")
case("Flatten", [I(2, 3, 4, 5)], [O(F, 6, 20)], axis=2)
case("Squeeze", [I(2, 1, 3, 1), C([1], np.int64)], [O(F, 2, 3, 1)])
case("Squeeze", [I(2, 1, 3, 1)], [O(F, 2, 3)], tag="all")
case("Squeeze", [I(2, 1, 3, 1)], [O(F, 2, 1, 3)], opset=11, tag="attr", axes=[3])
case("Unsqueeze", [I(2, 3), C([0, 3], np.int64)], [O(F, 1, 2, 3, 1)])
case("Unsqueeze", [I(2, 3)], [O(F, 2, 1, 3)], opset=11, tag="attr", axes=[1])
case("Unsqueeze", [I(2, 3), I(2, dt=I64)], [O(F, "?", "?", "?", "?")], tag="unknown")
case("Transpose", [I(2, 3, 4)], [O(F, 4, 2, 3)], perm=[2, 0, 1])
case("Transpose", [I(2, 3, 4)], [O(F, 4, 3, 2)], tag="default")
case("Expand", [I(3, 1), C([2, 1, 4], np.int64)], [O(F, 2, 3, 4)])
case("Tile", [I(2, 3), C([2, 2], np.int64)], [O(F, 4, 6)])
case("Tile", [I(2, 3), C(np.int64(3)), C(np.int64(1))], [O(F, 2, 9)], opset=1, tag="1", no_old=True)
case("DepthToSpace", [I(1, 8, 2, 3)], [O(F, 1, 2, 4, 6)], blocksize=2)
case("DepthToSpace", [I(1, 6, 2, 3)], [], tag="bad", blocksize=2, err="not a multiple of blocksize")
case("SpaceToDepth", [I(1, 2, 4, 6)], [O(F, 1, 8, 2, 3)], blocksize=2)

# ---------------------------------------------------------------- indexing
case("Concat", [I(2, 3), I(2, 5)], [O(F, 2, 8)], axis=1)
case("Concat", [I(2, 3), I(2, 5)], [O(F, 2, 8)], opset=1, tag="1")
case("Split", [I(7, 4)], [O(F, 2, 4), O(F, 2, 4), O(F, 2, 4), O(F, 1, 4)], axis=0, num_outputs=4)
case("Split", [I(6), C([1, 2, 3], np.int64)], [O(F, 1), O(F, 2), O(F, 3)], tag="input")
case("Split", [I(6, 3)], [O(F, 2, 3), O(F, 4, 3)], opset=11, tag="attr", split=[2, 4])
case("Split", [I(6)], [O(F, 2), O(F, 2), O(F, 2)], opset=13, tag="even")
case("Split", [I(6), C([1, 2], np.int64)], [O(F, 1), O(F, 2)], tag="badsum", err="add up to 3")
case("Split", [I(6)], [O(F, 3), O(F, 3)], tag="badn", num_outputs=3, err="num_outputs is 3")
case("Slice", [I(10, 20), C([1, 0], np.int64), C([8, 1000], np.int64), C([0, 1], np.int64), C([2, 3], np.int64)],
     [O(F, 4, 7)])
case("Slice", [I(10), C([9], np.int64), C([-100], np.int64), None, C([-2], np.int64)], [O(F, 5)], tag="neg")
case("Slice", [I(4, 10)], [O(F, 4, 8)], opset=9, tag="attr", starts=[1], ends=[-1], axes=[1])
case("Gather", [I(5, 4, 3), I(2, 2, dt=I64)], [O(F, 5, 2, 2, 3)], axis=1)
case("GatherElements", [I(3, 4), I(3, 2, dt=I64)], [O(F, 3, 2)], axis=1)
case("GatherND", [I(2, 3, 4), I(2, 1, 2, dt=I64)], [O(F, 2, 1, 4)])
case("GatherND", [I(2, 3, 4), I(2, 1, dt=I64)], [O(F, 2, 4)], tag="batch", batch_dims=1)
case("ScatterND", [I(4, 5), I(2, 1, dt=I64), I(2, 5)], [O(F, 4, 5)], reduction="max")
case("ScatterElements", [I(3, 3), I(2, 3, dt=I64), I(2, 3)], [O(F, 3, 3)], axis=0)
case("Scatter", [I(3, 3), I(2, 3, dt=I64), I(2, 3)], [O(F, 3, 3)], opset=11, no_old=True)
case("TopK", [I(3, 10), C([4], np.int64)], [O(F, 3, 4), O(I64, 3, 4)], axis=1)
case("TopK", [I(3, 10)], [O(F, 3, 2), O(I64, 3, 2)], opset=1, tag="1", k=2)
case("OneHot", [I(2, 3, dt=I64), C([5], np.int64), C([0, 1], np.float32)], [O(F, 2, 3, 5)])
case("OneHot", [I(2, 3, dt=I64), C([5], np.int64), C([0, 1], np.float32)], [O(F, 5, 2, 3)], tag="axis0", axis=0)
case("NonZero", [I(3, 4)], [O(I64, 2, "?")])
case("NonMaxSuppression", [I(1, 10, 4), I(1, 1, 10)], [O(I64, "?", 3)])
case("Compress", [I(3, 4), I(2, dt=B)], [O(F, "?", 4)], axis=0)
case("Compress", [I(3, 4), I(2, dt=B)], [O(F, "?")], tag="flat")
case("Unique", [I(6)], [O(F, "?"), O(I64, "?"), O(I64, 6), O(I64, "?")])
case("Unique", [I(4, 3)], [O(F, "?", 3), O(I64, "?"), O(I64, 4), O(I64, "?")], tag="axis", axis=0)
case("CenterCropPad", [I(10, 7, 3), C([5, 9], np.int64)], [O(F, 5, 9, 3)], axes=[0, 1])
case("CenterCropPad", [I(10, 7, 3), C([4, 4, 4], np.int64)], [O(F, 4, 4, 4)], tag="all")
case("CenterCropPad", [I(10, 7, 3), I(2, dt=I64)], [O(F, "?", "?", 3)], tag="unknown", axes=[0, 1])

# ---------------------------------------------------------------- sequences, optionals, strings
SEQ = [helper.make_node("SequenceConstruct", ["i0", "i0"], ["seq"])]
case("SequenceConstruct", [I(2, 3), I(2, 3)], [DYN])
case("SequenceEmpty", [], [DYN])
case("SequenceLength", ["seq"], [O(I64)], pre=SEQ, ins0=[I(2, 3)])
# bufplan does not track a sequence's element type and shape (onnx does): these stay dynamic
case("SequenceAt", ["seq", C(np.int64(0))], [DYN], pre=SEQ, ins0=[I(2, 3)], no_onnx=True)
case("SequenceInsert", ["seq", "i0"], [DYN], pre=SEQ, ins0=[I(2, 3)])
case("SequenceErase", ["seq"], [DYN], pre=SEQ, ins0=[I(2, 3)])
case("ConcatFromSequence", ["seq"], [DYN], pre=SEQ, ins0=[I(2, 3)], axis=0, no_onnx=True)
case("SplitToSequence", [I(6, 2)], [DYN])
case("Optional", [I(2, 3)], [DYN])
case("OptionalHasElement", [I(2, 3)], [O(B)])
case("OptionalGetElement", [I(2, 3)], [O(F, 2, 3)])
case("Identity", ["seq"], [DYN], tag="seq", pre=SEQ, ins0=[I(2, 3)])
_body = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "body",
                          [helper.make_tensor_value_info("x", F, None)], [helper.make_tensor_value_info("y", F, None)])
case("SequenceMap", ["seq"], [DYN], pre=SEQ, ins0=[I(2, 3)], body=_body)
case("StringNormalizer", [I(3, dt=S)], [DYN], case_change_action="LOWER")
case("StringConcat", [I(2, dt=S), I(2, dt=S)], [DYN])
case("StringSplit", [I(3, dt=S)], [DYN, O(I64, 3)])
case("RegexFullMatch", [I(2, 3, dt=S)], [O(B, 2, 3)], pattern="a+")
case("TfIdfVectorizer", [I(2, 6, dt=I64)], [O(F, 2, 3)], mode="TF", min_gram_length=1, max_gram_length=1,
     max_skip_count=0, pool_int64s=[2, 3, 5], ngram_counts=[0], ngram_indexes=[0, 1, 2])
case("TfIdfVectorizer", [I(6, dt=I64)], [O(F, 4)], tag="1d", mode="TF", min_gram_length=1, max_gram_length=1,
     max_skip_count=0, pool_int64s=[2, 3, 5], ngram_counts=[0], ngram_indexes=[0, 3, 1])

# ---------------------------------------------------------------- conv, pool, matrix
case("Conv", [I(1, 3, 8, 8), I(4, 3, 3, 3)], [O(F, 1, 4, 4, 4)], pads=[1, 1, 1, 1], strides=[2, 2])
case("Conv", [I(1, 3, 7, 7), I(4, 3, 3, 3)], [O(F, 1, 4, 4, 4)], tag="same", auto_pad="SAME_UPPER", strides=[2, 2])
case("ConvTranspose", [I(1, 4, 5, 5), I(4, 2, 3, 3)], [O(F, 1, 2, 11, 11)], strides=[2, 2])
case("ConvTranspose", [I(1, 4, 5, 5), I(4, 2, 3, 3)], [O(F, 1, 2, 10, 10)], tag="oshape", strides=[2, 2],
     output_shape=[10, 10])
case("ConvInteger", [I(1, 1, 5, 5, dt=U8), I(1, 1, 3, 3, dt=U8)], [O(I32, 1, 1, 3, 3)])
case("QLinearConv", [I(1, 1, 5, 5, dt=U8), I(dt=F), I(dt=U8), I(2, 1, 3, 3, dt=U8), I(dt=F), I(dt=U8), I(dt=F),
                     I(dt=U8)], [O(U8, 1, 2, 3, 3)])
case("DeformConv", [I(1, 3, 8, 8), I(4, 3, 3, 3), I(1, 18, 6, 6)], [O(F, 1, 4, 6, 6)])
case("MaxPool", [I(1, 3, 8, 8)], [O(F, 1, 3, 4, 4), O(I64, 1, 3, 4, 4)], kernel_shape=[2, 2], strides=[2, 2])
case("MaxPool", [I(1, 3, 7, 7)], [O(F, 1, 3, 4, 4)], tag="ceil", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
case("AveragePool", [I(1, 3, 7, 7)], [O(F, 1, 3, 4, 4)], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")
case("AveragePool", [I(1, 3, 8, 8)], [O(F, 1, 3, 6, 6)], tag="dil", kernel_shape=[2, 2], dilations=[2, 2])
case("LpPool", [I(1, 2, 6)], [O(F, 1, 2, 4)], kernel_shape=[3])
case("LpPool", [I(1, 2, 7)], [O(F, 1, 2, 4)], tag="ceil", kernel_shape=[2], strides=[2], ceil_mode=1, no_old=True)
for op in ["GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"]:
    case(op, [I(1, 3, 5, 6)], [O(F, 1, 3, 1, 1)])
case("MaxUnpool", [I(1, 3, 2, 2), I(1, 3, 2, 2, dt=I64)], [O(F, 1, 3, 4, 4)], kernel_shape=[2, 2], strides=[2, 2])
case("MaxUnpool", [I(1, 3, 2, 2), I(1, 3, 2, 2, dt=I64), C([1, 3, 5, 5], np.int64)], [O(F, 1, 3, 5, 5)],
     tag="oshape", kernel_shape=[2, 2], strides=[2, 2])
case("Gemm", [I(3, 5), I(4, 5), I(4)], [O(F, 3, 4)], transB=1)
case("MatMul", [I(2, 3, 4), I(4, 5)], [O(F, 2, 3, 5)])
case("MatMul", [I(4), I(2, 4, 5)], [O(F, 2, 5)], tag="1d")
case("MatMulInteger", [I(3, 4, dt=U8), I(4, 5, dt=U8)], [O(I32, 3, 5)])
case("QLinearMatMul", [I(3, 4, dt=U8), I(dt=F), I(dt=U8), I(4, 5, dt=U8), I(dt=F), I(dt=U8), I(dt=F), I(dt=U8)],
     [O(U8, 3, 5)])
case("Einsum", [I(2, 3), I(3, 4)], [O(F, 2, 4)], equation="ij,jk->ik")
case("Einsum", [I(2, 3), I(3, 4)], [O(F, 2, 4)], tag="implicit", equation="ij,jk")
case("Einsum", [I(5, 2, 3)], [O(F, 5, 3, 2)], tag="ellipsis", equation="...ij->...ji")
case("Det", [I(4, 3, 3)], [O(F, 4)])
case("Det", [I(3, 3)], [O(F)], tag="2d")
case("Det", [I(2, 3)], [], tag="bad", err="not square")

# ---------------------------------------------------------------- normalization
case("BatchNormalization", [I(2, 3, 4, 4), I(3), I(3), I(3), I(3)], [O(F, 2, 3, 4, 4)])
case("BatchNormalization", [I(2, 3, 4, 4), I(3), I(3), I(3), I(3)], [O(F, 2, 3, 4, 4), O(F, 3), O(F, 3)],
     tag="train", training_mode=1)
case("InstanceNormalization", [I(2, 3, 4, 4), I(3), I(3)], [O(F, 2, 3, 4, 4)])
case("LayerNormalization", [I(2, 3, 4), I(4), I(4)], [O(F, 2, 3, 4), O(F, 2, 3, 1), O(F, 2, 3, 1)])
case("LayerNormalization", [I(2, 3, 4), I(3, 4)], [O(F, 2, 3, 4), O(F, 2, 1, 1), O(F, 2, 1, 1)], tag="axis1", axis=1)
case("LayerNormalization", [I(2, 3, 4, dt=H), I(4, dt=H)], [O(H, 2, 3, 4), O(F, 2, 3, 1), O(F, 2, 3, 1)], tag="f16")
case("LayerNormalization", [I(2, 3, 4), I(4)], [], tag="bad", axis=3, err="axis 3 is out of range")
case("GroupNormalization", [I(2, 6, 4, 4), I(6), I(6)], [O(F, 2, 6, 4, 4)], num_groups=3)
case("GroupNormalization", [I(2, 6, 4, 4), I(3), I(3)], [O(F, 2, 6, 4, 4)], opset=18, tag="18", num_groups=3)

# ---------------------------------------------------------------- resize, pad
R = [I(1, 3, 4, 4), None]
case("Resize", R + [C([1, 1, 2, 2], np.float32)], [O(F, 1, 3, 8, 8)])
case("Resize", R + [None, C([1, 3, 5, 7], np.int64)], [O(F, 1, 3, 5, 7)], tag="sizes")
case("Resize", R + [None, C([6, 8], np.int64)], [O(F, 1, 3, 6, 8)], tag="axes", axes=[2, 3])
case("Resize", [I(1, 3, 4, 8), None, None, C([6, 10], np.int64)], [O(F, 1, 3, 5, 10)], tag="notlarger", axes=[2, 3],
     keep_aspect_ratio_policy="not_larger")
case("Resize", [I(1, 3, 4, 8), None, None, C([6, 10], np.int64)], [O(F, 1, 3, 6, 12)], tag="notsmaller",
     axes=[2, 3], keep_aspect_ratio_policy="not_smaller")
case("Resize", [I(1, 3, 4, 8), None, None, C([1, 3, 6, 10], np.int64)], [O(F, 1, 3, 4, 8)], tag="notlarger4",
     keep_aspect_ratio_policy="not_larger", no_old=True)
case("Resize", R + [C([1, 1, 0.5, 0.5], np.float32)], [O(F, 1, 3, 2, 2)], tag="aa", antialias=1, mode="linear")
case("Resize", [I(1, 3, 5, 5), None, C([1, 1, 0.5, 0.5], np.float32)], [O(F, 1, 3, 2, 2)], opset=13, tag="13")
case("Resize", [I(1, 3, 4, 4), C([1, 1, 2, 3], np.float32)], [O(F, 1, 3, 8, 12)], opset=10, tag="10")
case("Upsample", [I(1, 1, 2, 2), C([1, 1, 2, 2], np.float32)], [O(F, 1, 1, 4, 4)], opset=10)
case("Upsample", [I(1, 1, 2, 2), C([1, 1, 2, 3], np.float32)], [O(F, 1, 1, 4, 6)], opset=9, tag="9")
case("Upsample", [I(1, 1, 2, 2)], [O(F, 1, 1, 4, 6)], opset=7, tag="7", scales=[1.0, 1.0, 2.0, 3.0])
case("Upsample", [I(1, 1, 2, 2)], [O(F, 1, 1, 4, 6)], opset=1, tag="1", height_scale=2.0, width_scale=3.0, no_old=True)
case("Pad", [I(2, 3), C([1, 2, 0, 1], np.int64)], [O(F, 3, 6)])
case("Pad", [I(2, 3), C([2, 3], np.int64), None, C([1], np.int64)], [O(F, 2, 8)], tag="axes")
case("Pad", [I(2, 3), C([0, -1, 0, 0], np.int64)], [O(F, 2, 2)], tag="neg", mode="constant")
case("Pad", [I(2, 3), I(4, dt=I64)], [O(F, "?", "?")], tag="unknown")
case("Pad", [I(2, 3), I(2, dt=I64), None, C([0], np.int64)], [O(F, "?", 3)], tag="unknownaxes")
case("Pad", [I(2, 3)], [O(F, 2, 5)], opset=2, tag="2", pads=[0, 1, 0, 1])
case("Pad", [I(2, 3)], [O(F, 4, 3)], opset=1, tag="1", paddings=[1, 0, 1, 0], no_old=True)
case("Pad", [I(2, 3), C([1, 1, 1, 1], np.int64)], [O(F, 4, 5)], opset=11, tag="11", mode="reflect")

# ---------------------------------------------------------------- recurrent
case("GRU", [I(5, 2, 3), I(1, 12, 3), I(1, 12, 4)], [O(F, 5, 1, 2, 4), O(F, 1, 2, 4)], hidden_size=4)
case("LSTM", [I(5, 2, 3), I(2, 16, 3), I(2, 16, 4)], [O(F, 5, 2, 2, 4), O(F, 2, 2, 4), O(F, 2, 2, 4)], hidden_size=4,
     direction="bidirectional")
case("RNN", [I(2, 5, 3), I(1, 4, 3), I(1, 4, 4)], [O(F, 2, 5, 1, 4), O(F, 2, 1, 4)], hidden_size=4, layout=1)

# ---------------------------------------------------------------- quantization
case("QuantizeLinear", [I(2, 3), I(), I(dt=I8)], [O(I8, 2, 3)])
case("QuantizeLinear", [I(2, 3), I()], [O(U8, 2, 3)], tag="nozp")
case("QuantizeLinear", [I(2, 3), I()], [O(I8, 2, 3)], tag="odt", output_dtype=I8)
case("QuantizeLinear", [I(2, 3), I()], [DYN], tag="int4", output_dtype=INT4)
case("QuantizeLinear", [I(2, 3), I(), I(dt=F8E4M3FN)], [O(F8E4M3FN, 2, 3)], tag="f8")
case("QuantizeLinear", [I(2, 4), I(2, 2)], [O(U8, 2, 4)], tag="block", axis=1, block_size=2)
case("QuantizeLinear", [I(2, 3), I(), I(dt=I8)], [], tag="bad", output_dtype=U8, err="differs from the zero point")
case("DequantizeLinear", [I(2, 3, dt=I8), I(), I(dt=I8)], [O(F, 2, 3)])
case("DequantizeLinear", [I(2, 3, dt=I8), I(dt=H)], [O(H, 2, 3)], tag="f16", no_old=True)
case("DequantizeLinear", [I(2, 3, dt=I8), I(dt=H)], [O(F, 2, 3)], tag="f16", opset=13)
case("DequantizeLinear", [I(2, 4, dt=I8), I(2, 2)], [O(F, 2, 4)], tag="block", axis=1, block_size=2)
case("DynamicQuantizeLinear", [I(2, 3)], [O(U8, 2, 3), O(F), O(U8)])

# ---------------------------------------------------------------- signal
case("DFT", [I(2, 16, 1)], [O(F, 2, 16, 2)])
case("DFT", [I(2, 16, 1)], [O(F, 2, 9, 2)], tag="onesided", onesided=1)
case("DFT", [I(2, 16, 2), C(np.int64(32))], [O(F, 2, 32, 2)], tag="len")
case("DFT", [I(2, 8, 10, 2), None, C(np.int64(1))], [O(F, 2, 8, 10, 2)], tag="axis1")
case("DFT", [I(2, 8, 10, 1), None, C(np.int64(-2))], [O(F, 2, 8, 6, 2)], tag="axisneg", onesided=1)
case("DFT", [I(2, 8, 10, 1), C(np.int64(16)), C(np.int64(1))], [O(F, 2, 16, 10, 2)], tag="inverse", inverse=1)
case("DFT", [I(2, 16, 1), C(np.int64(16))], [O(F, 2, 9, 2)], opset=17, tag="17", onesided=1)
case("DFT", [I(2, 4, 8, 1)], [O(F, 2, 4, 8, 2)], opset=17, tag="17axis", axis=2)
case("DFT", [I(2, 16, 3)], [], tag="bad", err="last dimension is 3")
# onnx 1.12's STFT inference takes onesided as 0 when absent; the default is 1 (onnx's own backend test
# test_stft: [1,128,1], frame_length 16 -> [1,15,9,2]), so it is not compared
case("STFT", [I(2, 64, 1), C(np.int64(16)), I(16)], [O(F, 2, 4, 9, 2)], no_onnx=True)
case("STFT", [I(2, 64, 1), C(np.int64(16)), None, C(np.int64(32))], [O(F, 2, 3, 32, 2)], tag="len", onesided=0)
case("STFT", [I(2, 64, 2), C(np.int64(8)), None, C(np.int64(16))], [O(F, 2, 7, 9, 2)], opset=17, tag="17",
     no_onnx=True)
case("STFT", [I(2, 8, 1), C(np.int64(4)), None, C(np.int64(16))], [], tag="bad", err="longer than the signal")
for op in ["HannWindow", "HammingWindow", "BlackmanWindow"]:
    case(op, [C(np.int64(10))], [O(F, 10)])
case("HannWindow", [C(np.int32(8))], [O(D, 8)], tag="double", output_datatype=D, periodic=0)
case("MelWeightMatrix", [C(np.int64(8)), C(np.int64(16)), C(np.int64(16000)), C(np.float32(0)), C(np.float32(8000))],
     [O(F, 9, 8)])

# ---------------------------------------------------------------- vision
case("GridSample", [I(1, 3, 8, 8), I(1, 5, 6, 2)], [O(F, 1, 3, 5, 6)])
case("GridSample", [I(1, 2, 4, 4, 4), I(1, 3, 5, 6, 3)], [O(F, 1, 2, 3, 5, 6)], tag="3d", no_old=True)
case("Col2Im", [I(1, 8, 9), C([4, 4], np.int64), C([2, 2], np.int64)], [O(F, 1, 2, 4, 4)])
case("Col2Im", [I(1, 7, 9), C([4, 4], np.int64), C([2, 2], np.int64)], [], tag="bad", err="not a multiple of the block size")
case("AffineGrid", [I(2, 2, 3), C([2, 3, 5, 7], np.int64)], [O(F, 2, 5, 7, 2)])
case("AffineGrid", [I(2, 3, 4), C([2, 3, 4, 5, 6], np.int64)], [O(F, 2, 4, 5, 6, 3)], tag="3d")
case("RoiAlign", [I(1, 3, 16, 16), I(5, 4), I(5, dt=I64)], [O(F, 5, 3, 7, 7)], output_height=7, output_width=7)
case("RoiAlign", [I(1, 3, 16, 16), I(5, 4), I(5, dt=I64)], [O(F, 5, 3, 1, 1)], tag="default")
case("MaxRoiPool", [I(1, 3, 16, 16), I(4, 5)], [O(F, 4, 3, 2, 3)], pooled_shape=[2, 3])
case("MaxRoiPool", [I(1, 3, 16, 16), I(4, 5)], [], tag="bad", err="pooled_shape is missing")
case("ImageDecoder", [I(100, dt=U8)], [O(U8, "?", "?", 3)])
case("ImageDecoder", [I(100, dt=U8)], [O(U8, "?", "?", 1)], tag="gray", pixel_format="Grayscale")

# ---------------------------------------------------------------- losses
case("NegativeLogLikelihoodLoss", [I(3, 5), I(3, dt=I64)], [O(F)])
case("NegativeLogLikelihoodLoss", [I(3, 5, 2), I(3, 2, dt=I64)], [O(F, 3, 2)], tag="none", reduction="none")
case("SoftmaxCrossEntropyLoss", [I(3, 5), I(3, dt=I64)], [O(F), O(F, 3, 5)])
case("SoftmaxCrossEntropyLoss", [I(3, 5, 2), I(3, 2, dt=I64)], [O(F, 3, 2)], tag="none", reduction="none")
case("Multinomial", [I(4, 10)], [], tag="bad", dtype=F, err="not int32 or int64")

# ---------------------------------------------------------------- symbols pass through the new rules
case("Det", [I("N", 3, 3)], [O(F, "N")], tag="sym")
case("DFT", [I("N", 16, 1)], [O(F, "N", 16, 2)], tag="sym")
case("DFT", [I(2, "L", 1)], [O(F, 2, "?", 2)], tag="symlen", onesided=1)
case("DFT", [I(2, 16, 1), None, C(np.int64(2))], [], tag="badaxis", err="axis 2 is out of range")
case("STFT", [I("N", "L", 1), C(np.int64(16)), I(16)], [O(F, "N", "?", 9, 2)], tag="sym")
case("Col2Im", [I("N", 8, 9), C([4, 4], np.int64), C([2, 2], np.int64)], [O(F, "N", 2, 4, 4)], tag="sym")
case("RoiAlign", [I(1, 3, 16, 16), I("R", 4), I("R", dt=I64)], [O(F, "R", 3, 7, 7)], tag="sym", output_height=7,
     output_width=7)
case("Multinomial", [I("B", 10)], [O(I32, "B", 3)], tag="sym", sample_size=3)
case("NegativeLogLikelihoodLoss", [I("N", 5), I("N", dt=I64)], [O(F, "N")], tag="sym", reduction="none")
case("Unique", [I("N")], [O(F, "?"), O(I64, "?"), O(I64, "N"), O(I64, "?")], tag="sym")

# ---------------------------------------------------------------- opsets
case("Relu", [I(2, 3)], [O(F, 2, 3)], tag="opset23", opset=23, err="bufplan knows opsets 1..22")


def name_of(c):
    n = c["op"] + ("_" + c["tag"] if c["tag"] else "") + ("" if c["opset"] == NEWEST else "_%d" % c["opset"])
    return n


def build(c, opset):
    """The model of case c at `opset` and its output names."""
    inputs, inits, names = [], [], []
    ins = c["ins0"]
    for k, v in enumerate(ins or []):
        inputs.append(helper.make_tensor_value_info("i%d" % k, v[1], v[2]))
    for k, v in enumerate(c["ins"]):
        nm = "i%d" % k
        if v is None:
            names.append("")
        elif isinstance(v, str):
            names.append(v)
        elif v[0] == "in":
            if not ins:
                inputs.append(helper.make_tensor_value_info(nm, v[1], v[2]))
            names.append(nm)
        else:
            inits.append(numpy_helper.from_array(v[1], nm))
            names.append(nm)
    outs = ["o%d" % k for k in range(max(len(c["outs"]), 1))]
    node = helper.make_node(c["op"], names, outs, name="n", **c["attrs"])
    g = helper.make_graph(c["pre"] + [node], name_of(c), inputs, [helper.make_empty_tensor_value_info(o) for o in outs],
                          initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="op_models"), outs


def oracle(model, outs):
    """onnx 1.12's own inference of the outputs; None when it fails."""
    try:
        inf = shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:
        return None
    return onnx_oracle.typed_tensors(inf.graph, set(outs))


def schema_at(op, opset):
    try:
        return onnx.defs.get_schema(op, opset, "")
    except Exception:
        return None


def valid_at(model, opset):
    """Whether onnx's checker accepts every node of the model at `opset`."""
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = model.ir_version
    ctx.opset_imports = {"": opset}
    try:
        for n in model.graph.node:
            onnx.checker.check_node(n, ctx)
    except Exception:
        return False
    return True


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    if len(argv) > 2:
        table = set(re.findall(r'\{"(\w+)", bp__ox_inf_\w+\}', open(argv[2]).read()))
        have = {c["op"] for c in CASES if c["opset"] == LAST.get(c["op"], NEWEST) and not c["err"]}
        missing = sorted(table - have)
        if missing:
            print("op_models: no case at the newest opset for: " + " ".join(missing), file=sys.stderr)
            return 1
    manifest, seen = [], set()
    for c in CASES:
        name = name_of(c)
        assert name not in seen, name
        seen.add(name)
        variants = [(name, c["opset"])]
        model, outs = build(c, c["opset"])
        for old in OLD_COPIES:
            if c["opset"] == NEWEST and not c["err"] and not c["no_old"] and schema_at(c["op"], old) is not None:
                if valid_at(model, old):
                    variants.append((name + "_o%d" % old, old))
        for vname, opset in variants:
            m = model if opset == c["opset"] else build(c, opset)[0]
            path = os.path.join(out, vname + ".onnx")
            onnx.save(m, path)
            use = opset <= 17 and schema_at(c["op"], opset) is not None and not c["err"] and not c["no_onnx"]
            orc = oracle(m, outs) if use else None
            manifest.append({"name": vname, "file": path, "op": c["op"], "opset": opset, "err": c["err"],
                             "outputs": [{"name": o, "expect": e} for o, e in zip(outs, c["outs"])], "onnx": orc})
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(manifest, f, indent=0)
    print("op_models: %d models (%d compared with onnx 1.12)" % (len(manifest), sum(1 for m in manifest if m["onnx"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
