"""From a captured fx graph to a bufplan graph and back: the program the
runner executes.

1. Calibration: the fx graph runs once in its traced order, each op with the
   planned allocator recording what it allocates and frees.  An op's output
   is the allocation its storage starts at; the other allocations it frees
   before returning are its workspace; any it keeps without returning stay on
   the heap.  An output that allocated nothing shares an argument's storage:
   a view (the schema's alias info says so for view ops; _unsafe_view and the
   like share storage without saying it, and are found the same way).
2. The graph: one tensor per fx value (the bytes of its storage), views set
   with bp_graph_set_view, one workspace tensor per op that needs one (its
   temporaries packed by bufplan's own assigner over their alloc/free order),
   op types the full overload names ("aten.convolution.default"), in-place
   hints only for element-wise ops whose output has the input's layout, and
   RNG ops chained by zero-byte token tensors (each reads the previous one's
   token), so that no order changes the sequence of random numbers.
3. The engine profile (`engine`, a "bufplan-engine" document): what ATen
   does with this graph's op types, so that the planner and the verifier
   check the plan against it.  A view rule [out, in] for a type every one of
   whose ops has that output as a view of that input (the storage sharing the
   calibration saw, which agrees with the schema's alias info); an in-place
   rule [0, "*"] for an element-wise type every one of whose ops has one
   output and the input's layout on every same-sized input that could be
   written over; the per-op layout matches stay graph hints (graph_hints).
4. The queues: for every op, the sizes in allocation order and where each
   goes (an output's planned offset, a slot of the workspace, or the heap).
"""
import operator

import torch
from torch.fx.node import map_arg
from torch.utils import _pytree as pytree

import bufplan

# Element-wise ops whose output may be written over a same-layout input that
# dies there (TensorIterator reads each element before writing it).
POINTWISE = {
    "aten.relu.default", "aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor", "aten.div.Tensor",
    "aten.sigmoid.default", "aten.tanh.default", "aten.gelu.default", "aten.silu.default",
    "aten.hardswish.default", "aten.hardsigmoid.default", "aten.hardtanh.default", "aten.neg.default",
    "aten.exp.default", "aten.clamp.default", "aten.threshold_backward.default", "aten.gelu_backward.default",
    "aten.silu_backward.default", "aten.sigmoid_backward.default", "aten.tanh_backward.default",
    "aten.hardswish_backward.default", "aten.hardtanh_backward.default", "aten.add.Scalar", "aten.mul.Scalar",
    "aten.div.Scalar", "aten.sub.Scalar", "aten.rsqrt.default", "aten.sqrt.default", "aten.pow.Tensor_Scalar",
    "aten.where.self", "aten.native_dropout_backward.default", "aten.clone.default",
}


def op_type(target):
    """The full overload name of an fx call target ("aten.add.Tensor")."""
    name = getattr(target, "_overloadpacket", None)
    if name is not None and hasattr(target, "_overloadname"):
        return "%s.%s" % (str(name), target._overloadname)
    return getattr(target, "__name__", str(target))


def is_random(target):
    tags = getattr(target, "tags", ()) or ()
    if torch.Tag.nondeterministic_seeded in tags:
        return True
    n = op_type(target)
    return any(k in n for k in ("bernoulli", "dropout", "rand", "normal", "uniform", "multinomial",
                                "exponential", "cauchy", "geometric", "log_normal"))


def alias_args(target, args):
    """The positional tensor arguments the schema says output 0 may alias."""
    schema = getattr(target, "_schema", None)
    if schema is None or not schema.returns or schema.returns[0].alias_info is None:
        return []
    sets = set(schema.returns[0].alias_info.before_set)
    out = []
    for i, a in enumerate(schema.arguments):
        if i < len(args) and a.alias_info is not None and sets & set(a.alias_info.before_set):
            out.append(i)
    return out


def _storage(t):
    s = t.storage()
    return s.data_ptr(), s.nbytes()


def _dense_same(a, b):
    """Same shape, strides, dtype, no offset, and dense: safe to write a over b."""
    return (a.shape == b.shape and a.stride() == b.stride() and a.dtype == b.dtype and a.storage_offset() == 0
            and b.storage_offset() == 0 and a.is_contiguous() and _storage(a)[1] == _storage(b)[1]
            == a.numel() * a.element_size())


class Op:
    """One planned op: the fx node, the bufplan op id, its output tensor ids
    (flattened), its queue (sizes in allocation order and where each goes:
    ('out', tensor id), ('ws', offset in the workspace) or ('heap',)), and
    its workspace tensor id (-1 when none)."""

    __slots__ = ("node", "id", "outs", "queue", "ws", "ws_bytes", "getitems", "fresh", "uninitialized", "ins",
                 "all_outs", "inplace_ok")

    def __init__(self, node):
        self.node = node
        self.id = -1
        self.outs = []
        self.queue = []
        self.ws = -1
        self.ws_bytes = 0
        self.getitems = []
        self.fresh = []   # output tensor ids that the op allocates itself
        self.ins, self.all_outs = [], []   # the bufplan op's inputs and outputs
        self.inplace_ok = False            # every same-sized root input has the output's layout
        # empty, empty_like, new_empty, empty_strided: outputs whose bytes mean nothing yet
        self.uninitialized = "empty" in op_type(node.target)


class Program:
    """The captured graph as bufplan sees it (see the module comment)."""

    def __init__(self, cap, placeholder_values, recording):
        self.cap = cap
        self.gm = cap.gm
        self.graph = bufplan.Graph("torch-" + cap.mode)
        self.names, self.nbytes, self.view_of, self.meta = [], [], [], []
        self.node_tensors = {}       # fx node -> tensor id, or pytree of ids
        self.ops = []
        self.placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        self.output_node = [n for n in self.gm.graph.nodes if n.op == "output"][0]
        self.consts = {}
        self._rng = {}              # Op -> (token inputs, token output)
        self._producer_op = {}      # fx node -> Op
        self.recorded = getattr(recording, "records", True)
        self._build(placeholder_values, recording)

    # ---------------------------------------------------------- tensors
    def _tensor(self, name, t, nbytes, view_of=-1, role=None):
        tid = len(self.names)
        gid = self.graph.add_tensor(name, nbytes=nbytes)
        assert gid == tid
        self.names.append(name)
        self.nbytes.append(nbytes)
        self.view_of.append(view_of)
        self.meta.append((tuple(t.shape), tuple(t.stride()), t.dtype, t.storage_offset()) if t is not None else None)
        if view_of >= 0:
            self.graph.set_view(tid, view_of)
        if role:
            self.graph.mark(tid, role)
        return tid

    def _external(self, node, value, role):
        ids = []
        for i, t in enumerate(pytree.tree_flatten(value)[0]):
            if isinstance(t, torch.Tensor):
                ids.append(self._tensor(node.name if i == 0 else "%s.%d" % (node.name, i), t, _storage(t)[1],
                                        role=role))
        self.node_tensors[node] = ids[0] if len(ids) == 1 else ids

    # ---------------------------------------------------------- calibration
    def _build(self, ph_values, recording):
        roles = self.cap.roles()
        env = {}
        storage_owner = {}       # storage data_ptr -> tensor id of its root
        for node, v, role in zip(self.placeholders, ph_values, roles):
            env[node] = v
            self._external(node, v, "input" if role in ("input", "tangent") else "weight")
            storage_owner.setdefault(_storage(v)[0], self.node_tensors[node])
        last_token = -1
        n_rng = 0
        for node in self.gm.graph.nodes:
            if node.op == "get_attr":
                v = getattr(self.gm, node.target)
                env[node] = v
                self.consts[node] = v
                self._external(node, v, "weight")
                if isinstance(v, torch.Tensor):
                    storage_owner.setdefault(_storage(v)[0], self.node_tensors[node])
                continue
            if node.op != "call_function":
                continue
            if node.target is operator.getitem:
                src = node.args[0]
                env[node] = env[src][node.args[1]]
                ids = self.node_tensors.get(src)
                self.node_tensors[node] = ids[node.args[1]] if isinstance(ids, list) else ids
                owner = self._producer_op.get(src)
                if owner is not None:
                    owner.getitems.append(node)
                continue
            args = map_arg(node.args, lambda n: env[n])
            kwargs = map_arg(node.kwargs, lambda n: env[n])
            recording.take()
            out = node.target(*args, **kwargs)
            log = recording.take()
            env[node] = out
            op = Op(node)
            self._producer_op[node] = op
            self._add_op(op, node, args, out, log, storage_owner)
            if is_random(node.target):
                token = self._tensor("rng_token%d" % n_rng, None, 0)
                n_rng += 1
                op_in = [last_token] if last_token >= 0 else []
                self._rng[op] = (op_in, token)
                last_token = token
            self.ops.append(op)
        self.env_calibration = env
        self._finish()

    def _add_op(self, op, node, args, out, log, storage_owner):
        allocs = [(i, e[1], e[2]) for i, e in enumerate(log) if e[0] == "alloc"]
        # pair each free with the latest open allocation at its address (malloc reuses addresses)
        open_at, freed_at = {}, {}
        for i, e in enumerate(log):
            if e[0] == "alloc":
                open_at[e[2]] = i
            else:
                j = open_at.pop(e[2], None)
                if j is not None:
                    freed_at[j] = i
        flat = pytree.tree_flatten(out)[0]
        by_addr = {a: (i, log[i][1]) for a, i in open_at.items()}   # still allocated when the op returns
        out_alloc = {}
        ids = []
        for k, t in enumerate(flat):
            if not isinstance(t, torch.Tensor):
                ids.append(None)
                continue
            ptr, nb = _storage(t)
            name = node.name if len(flat) == 1 else "%s.%d" % (node.name, k)
            if ptr in by_addr and by_addr[ptr][0] not in out_alloc.values():
                tid = self._tensor(name, t, by_addr[ptr][1])
                out_alloc[tid] = by_addr[ptr][0]
                storage_owner[ptr] = tid
                op.fresh.append(tid)
            elif not self.recorded and ptr not in storage_owner:
                # no allocator to ask: a storage nobody had before is the op's own
                tid = self._tensor(name, t, nb)
                storage_owner[ptr] = tid
                op.fresh.append(tid)
            elif ptr in storage_owner:
                src = storage_owner[ptr]
                tid = self._tensor(name, t, self.nbytes[src], view_of=src)
            else:   # memory nobody allocated here (a global): kept out of the arena
                tid = self._tensor(name, t, nb, role="const")
            ids.append(tid)
        op.outs = [i for i in ids if i is not None]
        self.node_tensors[node] = ids[0] if len(flat) == 1 and not isinstance(out, (list, tuple)) else ids
        # the queue, in allocation order: outputs, workspace temporaries, the rest to the heap
        out_of = {a: t for t, a in out_alloc.items()}
        temps = []
        for i, size, addr in allocs:
            if i in out_of:
                op.queue.append([size, ("out", out_of[i])])
            elif i in freed_at:
                temps.append((i, freed_at[i] + 1, size, len(op.queue)))
                op.queue.append([size, ("ws", 0)])
            else:
                op.queue.append([size, ("heap",)])
        if temps:
            offs, info = bufplan.pack([(lo, hi, sz, 64) for lo, hi, sz, _ in temps], method="bestfit")
            for (_, _, _, qi), off in zip(temps, offs):
                op.queue[qi][1] = ("ws", off)
            op.ws_bytes = info["arena_bytes"]

    # ---------------------------------------------------------- the graph
    def _finish(self):
        g = self.graph
        for op in self.ops:
            node = op.node
            ins = []
            for a in node.all_input_nodes:
                v = self.node_tensors.get(a)
                for t in (v if isinstance(v, list) else [v]):
                    if t is not None and t not in ins:
                        ins.append(t)
            outs = list(op.outs)
            if op.ws_bytes:
                op.ws = self._tensor("ws:" + node.name, None, op.ws_bytes)
                outs.append(op.ws)
            rng = self._rng.get(op)
            if rng:
                ins += rng[0]
                outs.append(rng[1])
            op.id = g.add_op(node.name, op_type(node.target), ins, outs)
            op.ins, op.all_outs = ins, outs
            if op_type(node.target) in POINTWISE and len(op.fresh) == 1:
                self._inplace_hint(op, node)
        outs = pytree.tree_flatten(map_arg(self.output_node.args, lambda n: n))[0]
        self.outputs = []
        for n in outs:
            if n is None:
                self.outputs.append(None)
                continue
            t = self.node_tensors[n]
            self.outputs.append(t)
            if isinstance(t, int):
                g.mark(t, "output")
        g.finalize()
        self.engine = self._engine_profile()

    def _engine_profile(self):
        """The torch profile of this graph (see the module comment)."""
        by_type = {}
        for op in self.ops:
            by_type.setdefault(op_type(op.node.target), []).append(op)
        rules = {}
        for ty, ops in by_type.items():
            views = None
            for op in ops:
                pairs = set()
                for k, t in enumerate(op.all_outs):
                    src = self.view_of[t]
                    if src >= 0 and src in op.ins:
                        pairs.add((k, op.ins.index(src)))
                views = pairs if views is None else views & pairs
            r = {}
            if views:
                r["views"] = [list(p) for p in sorted(views)]
            if ty in POINTWISE and all(op.inplace_ok and len(op.all_outs) == 1 for op in ops):
                r.update({"inplace": [[0, "*"]], "same_dtype": True, "strided": False})
            if r:
                rules[ty] = r
        return {"format": "bufplan-engine", "version": 1, "name": "torch-aten", "concat_inplace": False,
                "graph_hints": True, "ops": rules}

    def _inplace_hint(self, op, node):
        out = op.fresh[0]
        env = self.env_calibration
        res = env[node]
        hinted = set()
        for a in node.args:
            if not isinstance(a, torch.fx.Node) or not isinstance(env.get(a), torch.Tensor):
                continue
            tid = self.node_tensors.get(a)
            if not isinstance(tid, int) or self.view_of[tid] >= 0 or self.graph.tensor_flags(tid) & 11:
                continue
            if _dense_same(res, env[a]):
                self.graph.set_inplace(op.id, out, tid)
                hinted.add(tid)
        # a type-wide rule may write over any root input of the output's size: each must have been hinted
        op.inplace_ok = all(t in hinted for t in op.ins
                            if self.nbytes[t] == self.nbytes[out] and self.view_of[t] < 0 and t != out
                            and not self.graph.tensor_flags(t) & 11)
