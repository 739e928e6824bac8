"""Makes runnable copies of the weightless ONNX models for the ONNX Runtime
peer (bench/ort).  The torchvision graphs in shared/data/onnx keep every
initializer's name, dims and dtype but their bytes were dropped (external
data whose file is gone).  Each such initializer gets deterministic values
of its declared dims and dtype, written inline: floats small and of mixed
sign (a fixed function of the element index), so that activations stay
finite; integers 0 (none of the dropped tensors is a shape, index or
Reshape target: those are small or integer and still inline; a model that
would need one refuses here).  Symbolic dims of the graph inputs and
outputs are bound (every dim_param to 1).  The graph itself is not changed:
the same nodes, tensors and shapes that bufplan plans.

usage: python3 prep_models.py OUTDIR MODEL.onnx...
Writes OUTDIR/NAME.onnx per model and prints "NAME ok" or "NAME skip REASON".
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16}
INTS = {onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.INT8, onnx.TensorProto.UINT8}


def fill(t):
    """Returns the deterministic values for initializer t (its dims and dtype)."""
    n = int(np.prod(t.dims)) if len(t.dims) else 1
    dt = onnx.helper.tensor_dtype_to_np_dtype(t.data_type) if hasattr(onnx.helper, "tensor_dtype_to_np_dtype") \
        else onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type]
    if t.data_type in FLOATS:
        i = np.arange(n, dtype=np.float64)
        v = 0.05 * np.sin(0.7 * i + 0.3)           # mixed sign, |v| <= 0.05
        if "var" in t.name:                         # a BatchNorm variance stays positive
            v = np.abs(v) + 0.5
        return v.astype(dt).reshape(tuple(t.dims))
    if t.data_type in INTS:
        return np.zeros(tuple(t.dims), dtype=dt)
    raise ValueError("initializer %s has dropped data of type %s" % (t.name, onnx.TensorProto.DataType.Name(t.data_type)))


def prepare(path, outdir):
    """Writes the runnable copy of path to outdir; returns (name, None) or (name, reason)."""
    name = os.path.splitext(os.path.basename(path))[0]
    m = onnx.load(path, load_external_data=False)
    consumers = {}
    for node in m.graph.node:
        for k, inp in enumerate(node.input):
            consumers.setdefault(inp, []).append((node.op_type, k))
    for t in m.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        for op, k in consumers.get(t.name, []):
            if (op, k) in (("Reshape", 1), ("Expand", 1), ("Tile", 1), ("Gather", 1), ("Slice", 1), ("Slice", 2)):
                return name, "dropped data of %s feeds %s input %d" % (t.name, op, k)
        try:
            v = fill(t)
        except ValueError as e:
            return name, str(e)
        new = numpy_helper.from_array(v, t.name)
        t.CopyFrom(new)
    for vi in list(m.graph.input) + list(m.graph.output):
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param") or not d.HasField("dim_value"):
                d.dim_value = 1
    onnx.save(m, os.path.join(outdir, name + ".onnx"))
    return name, None


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for p in sys.argv[2:]:
        name, why = prepare(p, outdir)
        print("%s %s" % (name, "ok" if why is None else "skip " + why), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
