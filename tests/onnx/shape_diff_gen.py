#!/usr/bin/python3
"""Hostile shapes for the differential test of shape inference
(tests/onnx/test_onnx_shape_diff.c): random one- and two-node models over the
ops bufplan infers, with edge-case dims (0, 1, huge, negative) and
attributes or constant inputs (axes out of range, INT64_MIN / INT64_MAX
slice bounds, zero steps, huge pads, strides and blocksizes, bad perms),
except zero strides, dilations and blocksizes (onnx 1.12's own inference
divides by zero on them; a case that still crashes onnx is left out),
each run through onnx.shape_inference.infer_shapes(strict_mode=True).

usage: shape_diff_gen.py OUTDIR COUNT SEED
Writes OUTDIR/case_NNNNN.onnx and OUTDIR/results.json:
[{"file": "case_NNNNN.onnx", "onnx_ok": bool, "tensors": {name: [int | null] | null}}]
where integer Range and Slice, whose inference in onnx 1.12 overflows on
64-bit edge values, take their dims from exact arithmetic instead.
Exit status 3 when onnx cannot be imported."""
import json
import os
import random
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper, shape_inference
except ImportError:
    sys.exit(3)

F, I64 = TensorProto.FLOAT, TensorProto.INT64
BIG = [2**31, 2**40, 2**62, 2**63 - 1]
EDGE_I = [0, 1, -1, 2, 3, -2, 5, 7, 2**31, 2**32, 2**62, 2**63 - 1, -2**63, -2**63 + 1]


def dim(r):
    x = r.random()
    if x < 0.04:
        return r.choice(BIG)
    if x < 0.07:
        return -1
    if x < 0.12:
        return 0
    return r.choice([1, 1, 2, 3, 4, 5, 6, 8])


def shape(r, lo=0, hi=4):
    return [dim(r) for _ in range(r.randint(lo, hi))]


def ival(r):
    return r.choice(EDGE_I) if r.random() < 0.3 else r.randint(-4, 6)


def ints(r, n):
    return [ival(r) for _ in range(n)]


def const(name, vals, dt=np.int64):
    return numpy_helper.from_array(np.array(vals, dtype=dt), name)


def case(r):
    """(nodes, inputs [(name, dtype, shape)], initializers) of one model."""
    N = helper.make_node
    op = r.choice(["Add", "Mul", "Concat", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Slice", "Gather", "Conv",
                   "MaxPool", "AveragePool", "Pad", "Flatten", "MatMul", "Split", "Tile", "Expand", "ReduceSum",
                   "SpaceToDepth", "DepthToSpace", "Range", "OneHot", "Where", "Softmax", "Shape", "ConstantOfShape"])
    a = shape(r)
    rank = len(a)
    ins = [("x", F, a)]
    inits = []
    if op in ("Add", "Mul", "Where"):
        b = shape(r) if r.random() < 0.5 else [r.choice([1, d]) if d > 0 else d for d in a]
        if op == "Where":
            ins = [("c", TensorProto.BOOL, b), ("x", F, a), ("y", F, shape(r))]
            return [N(op, ["c", "x", "y"], ["out"])], ins, inits
        ins.append(("y", F, b))
        return [N(op, ["x", "y"], ["out"])], ins, inits
    if op == "Concat":
        b = list(a)
        if b and r.random() < 0.7:
            b[r.randrange(len(b))] = dim(r)
        else:
            b = shape(r)
        ins.append(("y", F, b))
        return [N(op, ["x", "y"], ["out"], axis=r.randint(-rank - 1, rank))], ins, inits
    if op == "Reshape":
        inits.append(const("s", [r.choice([-1, 0, 1, 2, 3, 4, 6, 2**40, -2]) for _ in range(r.randint(0, 4))]))
        return [N(op, ["x", "s"], ["out"])], ins, inits
    if op == "Transpose":
        perm = list(range(rank))
        r.shuffle(perm)
        if perm and r.random() < 0.2:
            perm[0] = ival(r)
        return [N(op, ["x"], ["out"], perm=perm)], ins, inits
    if op in ("Squeeze", "Unsqueeze"):
        inits.append(const("ax", [r.randint(-rank - 2, rank + 1) for _ in range(r.randint(1, 2))]))
        return [N(op, ["x", "ax"], ["out"])], ins, inits
    if op == "Slice":
        k = r.randint(1, max(1, rank))
        inits += [const("st", ints(r, k)), const("en", ints(r, k)), const("ax", [r.randint(-rank, max(0, rank - 1)) for _ in range(k)]),
                  const("sp", [r.choice([1, 1, 2, -1, -2, 3, 2**62, -2**63]) for _ in range(k)])]
        return [N(op, ["x", "st", "en", "ax", "sp"], ["out"])], ins, inits
    if op == "Gather":
        ins.append(("i", I64, shape(r, 0, 2)))
        return [N(op, ["x", "i"], ["out"], axis=r.randint(-rank - 1, rank))], ins, inits
    if op in ("Conv", "MaxPool", "AveragePool"):
        sp = r.randint(1, 2)
        a = [r.choice([1, 2]), r.choice([1, 3])] + [r.choice([1, 2, 5, 8, 0, 2**40]) for _ in range(sp)]
        ins = [("x", F, a)]
        ks = [r.choice([1, 2, 3, 2**62]) for _ in range(sp)]
        attrs = {"strides": [r.choice([1, 2, 3, 2**62, -1]) for _ in range(sp)],
                 "pads": [r.choice([0, 1, 2, 2**62, -1]) for _ in range(2 * sp)]}
        if op != "AveragePool":
            attrs["dilations"] = [r.choice([1, 2, 2**62]) for _ in range(sp)]
        if op == "Conv":
            inits.append(const("w", np.zeros([r.choice([1, 2]), a[1]] + ks, dtype=np.float32), np.float32)
                         if all(k < 8 for k in ks) else const("w", np.zeros([1, a[1]] + [1] * sp, dtype=np.float32), np.float32))
            return [N(op, ["x", "w"], ["out"], **attrs)], ins, inits
        return [N(op, ["x"], ["out"], kernel_shape=ks, **attrs)], ins, inits
    if op == "Pad":
        inits.append(const("p", [r.choice([0, 1, 2, -1, 2**62, -2**62]) for _ in range(2 * rank)]))
        return [N(op, ["x", "p"], ["out"])], ins, inits
    if op == "Flatten":
        return [N(op, ["x"], ["out"], axis=r.randint(-rank - 1, rank + 1))], ins, inits
    if op == "MatMul":
        b = shape(r, 1, 3)
        if len(a) >= 1 and len(b) >= 2 and r.random() < 0.7:
            b[-2] = a[-1]
        ins.append(("y", F, b))
        return [N(op, ["x", "y"], ["out"])], ins, inits
    if op == "Split":
        if rank == 0:
            ins = [("x", F, [4])]
            rank = 1
        inits.append(const("sp", [r.choice([1, 2, 3, 0, -1, 11]) for _ in range(2)]))
        return [N(op, ["x", "sp"], ["o1", "o2"], axis=r.randint(-rank, rank - 1))], ins, inits
    if op == "Tile":
        inits.append(const("rp", [r.choice([0, 1, 2, 3, -1, 2**40]) for _ in range(rank)]))
        return [N(op, ["x", "rp"], ["out"])], ins, inits
    if op == "Expand":
        inits.append(const("s", [r.choice([1, 1, 2, 3, 0, -1, 2**40]) for _ in range(r.randint(0, 4))]))
        return [N(op, ["x", "s"], ["out"])], ins, inits
    if op == "ReduceSum":
        inits.append(const("ax", [r.randint(-rank - 1, rank) for _ in range(r.randint(1, 2))]))
        return [N(op, ["x", "ax"], ["out"], keepdims=r.randint(0, 1))], ins, inits
    if op in ("SpaceToDepth", "DepthToSpace"):
        ins = [("x", F, [r.choice([1, 2]), r.choice([1, 4, 8, 3]), r.choice([2, 4, 6, 0]), r.choice([2, 4, 3])])]
        return [N(op, ["x"], ["out"], blocksize=r.choice([1, 2, 3, 4, -1]))], ins, inits
    if op == "Range":
        if r.random() < 0.5:
            vals = [r.choice([0, 1, 5, -3, 2**62, -2**63, 2**63 - 1]) for _ in range(3)]
            vals[2] = r.choice([1, 2, -1, 0, 3, 2**63 - 1])
            inits += [const("s", vals[0]), const("l", vals[1]), const("d", vals[2])]
        else:
            vals = [r.choice([0.0, 1.5, 10.0, -3.0, 1e38, float("inf"), float("nan")]) for _ in range(3)]
            vals[2] = r.choice([1.0, 0.5, -1.0, 0.0, 1e-38, 3.0])
            inits += [const("s", vals[0], np.float32), const("l", vals[1], np.float32), const("d", vals[2], np.float32)]
        return [N(op, ["s", "l", "d"], ["out"])], [], inits
    if op == "OneHot":
        ins = [("i", I64, shape(r, 0, 2))]
        inits += [const("dp", [r.choice([1, 3, 10, 0, -1, -2**63, 2**40])]), const("v", [0.0, 1.0], np.float32)]
        return [N(op, ["i", "dp", "v"], ["out"], axis=r.randint(-3, 2))], ins, inits
    if op == "Softmax":
        return [N(op, ["x"], ["out"], axis=r.randint(-rank - 1, rank))], ins, inits
    if op == "Shape":
        return [N(op, ["x"], ["out"])], ins, inits
    inits.append(const("s", [r.choice([0, 1, 2, 3, -1, 2**40]) for _ in range(r.randint(0, 3))]))
    return [N("ConstantOfShape", ["s"], ["out"])], [], inits


def typed(model):
    res = {}
    for vi in list(model.graph.value_info) + list(model.graph.output):
        t = vi.type.tensor_type
        if not vi.type.HasField("tensor_type") or not t.HasField("shape"):
            res.setdefault(vi.name, None)
            continue
        res[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    return res


def infer_all(models):
    """[(onnx_ok, {name: dims}) or None] for [(model, outs)]: strict shape
    inference in child processes, one line per case on a pipe; a case that
    kills its child (onnx 1.12 divides by zero or overflows on some) gets
    None and a new child goes on from the next case."""
    res, k = [], 0
    while k < len(models):
        rd, wr = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rd)
            for m, outs in models[k:]:
                try:
                    t = typed(shape_inference.infer_shapes(m, strict_mode=True))
                    line = [all(o in t for o in outs), t]
                except Exception:
                    line = [False, {}]
                os.write(wr, (json.dumps(line) + "\n").encode())
            os._exit(0)
        os.close(wr)
        with os.fdopen(rd) as f:
            for line in f:
                res.append(tuple(json.loads(line)))
        os.waitpid(pid, 0)
        k = len(res)
        if k < len(models):
            res.append(None)
            k += 1
    return res


def exact(node, ins, inits):
    """The output dims by exact arithmetic (Python integers, numpy views
    that allocate nothing) for the ops whose onnx 1.12 inference overflows
    (integer Range, Slice), else None."""
    vals = {t.name: numpy_helper.to_array(t) for t in inits}
    try:
        if node.op_type == "Range" and all(vals[i].dtype == np.int64 for i in node.input):
            s, l, d = (int(vals[i]) for i in node.input)
            return [max(-((s - l) // d), 0)] if d else None
        if node.op_type == "Slice" and ins and all(x >= 0 for x in ins[0][2]):
            shp = ins[0][2]
            view = np.lib.stride_tricks.as_strided(np.zeros(1), shape=shp, strides=[0] * len(shp))
            sl = [slice(None)] * len(shp)
            st, en, ax, sp = (vals[i].tolist() for i in node.input[1:])
            for a, b, e, p in zip(ax, st, en, sp):
                if p == 0 or not -len(shp) <= a < len(shp):
                    return None
                sl[a] = slice(b, e, p)
            return list(view[tuple(sl)].shape)
    except (KeyError, ValueError, TypeError, OverflowError):
        return None
    return None


def main(argv):
    out, count, seed = argv[1], int(argv[2]), int(argv[3])
    r = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    made = []
    for k in range(count):
        nodes, ins, inits = case(r)
        outs = [o for n in nodes for o in n.output]
        try:
            g = helper.make_graph(nodes, f"case{k}", [helper.make_tensor_value_info(n, t, s) for n, t, s in ins],
                                  [helper.make_empty_tensor_value_info(o) for o in outs], inits)
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
            m.ir_version = 8
        except Exception:
            continue
        name = f"case_{k:05d}.onnx"
        with open(os.path.join(out, name), "wb") as f:
            f.write(m.SerializeToString())
        made.append((name, m, outs, exact(nodes[0], ins, inits) if len(outs) == 1 else None))
    results = []
    for (name, m, outs, ref), v in zip(made, infer_all([(m, outs) for _, m, outs, _ in made])):
        if v is None:   # onnx itself crashed: not compared
            continue
        ok, tensors = v
        if ref is not None and ok:   # onnx's own arithmetic overflowed: the exact dims are the reference
            tensors[outs[0]] = [x if x < 2**63 else None for x in ref]   # past int64: bufplan must reject
        results.append({"file": name, "onnx_ok": ok, "tensors": {o: tensors.get(o) for o in outs}})
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(sys.argv)
