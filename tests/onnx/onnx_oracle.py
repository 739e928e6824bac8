#!/usr/bin/env python3
"""Reference shapes for tests/test_onnx_shapes.c, from onnx's own shape inference.

usage: onnx_oracle.py MODEL.onnx [--dim SYM=N]... [--shape INPUT=AxBxC]... -o OUT.json

Binds the graph inputs (--shape replaces an input's dims, --dim replaces a
dim_param everywhere in the graph inputs and outputs), runs
onnx.shape_inference.infer_shapes(strict_mode=False, data_prop=True) and
writes {"tensors": {name: {"elem_type": int, "shape": [int | "param" | null] | null}},
"bodies": [{"path": [[node, attribute], ...], "tensors": {...}}]} for every node
output onnx typed, in the main graph and in every control-flow body.  Weights are not loaded (external data may
be missing).  Exit status 3 when onnx cannot be imported.
"""
import json
import sys


def typed_tensors(graph, names):
    """{name: {"elem_type", "shape": [int | str | None] | None}} of the tensors in `names` that an inferred
    graph (a model's, or a body's) types (value_info and graph outputs)."""
    res = {}
    for vi in list(graph.value_info) + list(graph.output):
        if vi.name not in names or not vi.type.HasField("tensor_type"):
            continue
        t = vi.type.tensor_type
        shape = None
        if t.HasField("shape"):
            shape = []
            for d in t.shape.dim:
                if d.HasField("dim_value"):
                    shape.append(d.dim_value)
                elif d.HasField("dim_param"):
                    shape.append(d.dim_param)
                else:
                    shape.append(None)
        res[vi.name] = {"elem_type": t.elem_type, "shape": shape}
    return res


def main(argv):
    try:
        import onnx
        from onnx import shape_inference
    except Exception as e:  # the caller skips the comparison
        print("onnx_oracle: cannot import onnx: %s" % e, file=sys.stderr)
        return 3
    model_path, out_path, dims, shapes = None, None, {}, {}
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "-o":
            out_path = argv[i + 1]; i += 2; continue
        if a == "--dim":
            k, v = argv[i + 1].split("=", 1); dims[k] = int(v); i += 2; continue
        if a == "--shape":
            k, v = argv[i + 1].split("=", 1); shapes[k] = [int(x) for x in v.split("x")] if v else []; i += 2; continue
        model_path = a; i += 1
    if not model_path or not out_path:
        print(__doc__, file=sys.stderr)
        return 2
    model = onnx.load(model_path, load_external_data=False)
    g = model.graph

    def bind(vi):
        t = vi.type.tensor_type
        if vi.name in shapes:
            del t.shape.dim[:]
            for v in shapes[vi.name]:
                t.shape.dim.add().dim_value = v
            return
        for d in t.shape.dim:
            if d.HasField("dim_param") and d.dim_param in dims:
                d.dim_value = dims[d.dim_param]

    for vi in list(g.input) + list(g.output):
        bind(vi)
    inferred = shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    bodies = []

    def walk(graph, path):
        """Control-flow bodies: the tensors onnx typed in each, by the path of
        (node name, attribute name) pairs that leads to it."""
        for n in graph.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    p = path + [[n.name, a.name]]
                    bodies.append({"path": p, "tensors": typed(a.g)})
                    walk(a.g, p)

    res = typed(inferred.graph)
    walk(inferred.graph, [])
    with open(out_path, "w") as f:
        json.dump({"model": model_path, "tensors": res, "bodies": bodies}, f)
    return 0


def typed(graph):
    """{name: {"elem_type", "shape"}} of the node outputs of graph that onnx typed."""
    produced = set()
    for n in graph.node:
        produced.update(o for o in n.output if o)
    return typed_tensors(graph, produced)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
