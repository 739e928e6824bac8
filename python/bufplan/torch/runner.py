"""Running a planned program: every op of the fx graph in the plan's order,
its outputs and workspace at their planned offsets in one uint8 arena.

With the planned allocator (allocator.py), each op is called as it is (the
real ATen kernel, composite or not) after this thread's queue is set to the
op's planned addresses; outputs land where the plan put them and nothing is
copied.  After the op, every output the op allocated is checked to sit at its
planned address (one that does not is an error naming the op, never a silent
wrong result).  Without it, the out= runner is the fallback: an op with an
out= overload writes into an arena view, any other op computes on the heap
and its outputs are copied into the arena (stats say how many bytes and ops).

Debug mode: the arena is filled with NaN before the run and, after every
op, each live tensor in the arena that shares bytes with what the op wrote
(its outputs and workspace: the only arena bytes a step writes) is compared
bit for bit with an eager run of the same graph (same inputs, RNG state and
buffers); after the last op, every tensor still live is.  The first that
differs is reported with its step, offset and the plan's buffer history of
its bytes (DebugMismatch).

Fallback events (a plan made under a budget, with copies; docs/FALLBACK.md):
after the op of a copy's evict step, a storage that comes back by prefetch is
copied to a host tensor (its arena bytes are then others'); one that comes
back by recompute is just dropped.  Before the op of the copy's first step,
the producer runs again with its output routed to the copy's offset (its
other outputs and its workspace to the heap), or the host bytes are copied
back to the copy's offset; then every value of that storage (the root, its
views, outputs written over it in place) is rebound to the new bytes with
its own shape, strides and storage offset.  An output written in place over
a moved storage goes where the storage is at that step.  A random op is
never run again (it would draw other numbers): such a plan is refused.

Each thread running a Runner gets its own arena, so two threads may call it
at once.
"""
import math
import operator
import threading
import weakref

import torch
from torch.fx.node import map_arg
from torch.utils import _pytree as pytree

from . import allocator
from .program import is_random

PAGE = 4096


class DebugMismatch(AssertionError):
    """A tensor of the planned run differs from the eager run."""


def _bits(t):
    """t's bytes as integers (the widest that divides them: torch.equal is
    slow on uint8, and NaN != NaN on floats)."""
    b = t.detach().reshape(-1).contiguous().view(torch.uint8)
    for dt, n in ((torch.int64, 8), (torch.int32, 4)):
        if b.numel() % n == 0 and b.data_ptr() % n == 0:
            return b.view(dt)
    return b


class Runner:
    def __init__(self, prog, plan, clone_outputs=True, debug=False):
        self.prog, self.plan = prog, plan
        self.clone_outputs = clone_outputs
        self.debug = debug
        self.lib = allocator.load()
        by_id = {op.id: op for op in prog.ops}
        self.order = [by_id[i] for i in plan.schedule]
        self.tp = plan.tensors()   # (first, last, offset, bytes, buffer, kind, alias_of)
        self.offset = [t[2] for t in self.tp]
        self.arena_bytes = plan.arena_bytes
        self._copies(plan.copies())
        self.local = threading.local()
        self.out_nodes = pytree.tree_flatten(map_arg(prog.output_node.args, lambda n: n))[0]
        self._release_lists()
        self._queues()
        self.fallback_stats = {"out_variant_ops": 0, "copied_ops": 0, "copied_bytes": 0}

    # ---------------------------------------------------------- setup
    def _copies(self, copies):
        """Per step, the copies made before its op (`before`) and the
        storages that leave after it (`after`: (root, offload?)); where
        each storage is at each step (`where`)."""
        n = len(self.order)
        self.root = [t if self.tp[t][6] < 0 else self.tp[t][6] for t in range(len(self.tp))]
        self.before = [[] for _ in range(n)]
        self.after = [[] for _ in range(n)]
        self.by_root = {}
        self.recompute_uses = {}   # step -> ops run again there
        by_id = {op.id: op for op in self.prog.ops}
        for c in copies:
            self.by_root.setdefault(c["tensor"], []).append(c)
            if c["kind"] == "recompute":
                op = by_id[c["op"]]
                if is_random(op.node.target):
                    raise RuntimeError("bufplan.torch: the plan recomputes the random op %s (%s), which would draw "
                                       "other numbers; plan with fallback='offload'" % (op.node.name, op.node.target))
                self.before[c["first"]].append((c, op))
                self.recompute_uses.setdefault(c["first"], []).append(op)
            else:
                self.before[c["first"]].append((c, None))
        if self.by_root and self.lib is None:
            raise RuntimeError("bufplan.torch: a plan with recompute or offload copies needs the planned allocator "
                               "(%s)" % allocator.why())
        if self.by_root and self.debug:
            raise ValueError("bufplan.torch: the debug mode does not check plans with recompute or offload copies")
        for r, cs in self.by_root.items():
            cs.sort(key=lambda c: c["first"])
            for c in cs:
                self.after[c["evict"]].append((r, c["kind"] == "prefetch"))
        self.nodes_of = {}   # storage root -> the fx nodes whose value is a tensor of it
        if self.by_root:
            for node, tid in self.prog.node_tensors.items():
                if isinstance(tid, int) and self.root[tid] in self.by_root:
                    self.nodes_of.setdefault(self.root[tid], []).append(node)

    def where(self, tid, step):
        """The arena offset of tensor tid's bytes at a step (its storage may
        have moved: a copy), None outside the arena."""
        r = self.root[tid]
        off = self.offset[tid]
        for c in self.by_root.get(r, ()):
            if c["first"] <= step:
                off = c["offset"] + (self.offset[tid] - self.offset[r] if self.offset[r] is not None else 0)
        return off

    def _release_lists(self):
        """For each step, the fx nodes whose value is not needed after it."""
        last = {}
        keep = set(n for n in self.out_nodes if n is not None)
        for step, op in enumerate(self.order):
            for o in [op] + self.recompute_uses.get(step, []):
                for a in o.node.all_input_nodes:
                    last[a] = max(last.get(a, step), step)
                    if a.op == "call_function" and a.target is operator.getitem:
                        last[a.args[0]] = max(last.get(a.args[0], step), step)
        for r, nodes in self.nodes_of.items():   # a storage that comes back keeps its values to rebind
            for c in self.by_root[r]:
                for nd in nodes:
                    if nd in last:
                        last[nd] = max(last[nd], c["first"])
        self.release = [[] for _ in self.order]
        for n, s in last.items():
            if n not in keep and n.op == "call_function":
                self.release[s].append(n)

    def _queues(self):
        """Per op: queue sizes and offsets (None = heap) in allocation order."""
        self.q_sizes, self.q_offs = [], []
        for op in self.order:
            sizes, offs = [], []
            for size, where in op.queue:
                sizes.append(size)
                if where[0] == "out":
                    offs.append(self.offset[where[1]])
                elif where[0] == "ws":
                    base = self.offset[op.ws] if op.ws >= 0 else None
                    offs.append(None if base is None else base + where[1])
                else:
                    offs.append(None)
            self.q_sizes.append(sizes)
            self.q_offs.append(offs)

    def set_offset(self, tensor, offset):
        """Moves one tensor to another offset (for testing the debug checks)."""
        self.offset[tensor] = offset
        self._check_lists = None
        self._queues()
        self.local = threading.local()

    # ---------------------------------------------------------- arenas
    def _state(self):
        st = getattr(self.local, "st", None)
        if st is not None:
            return st
        st = _Arena(self, self.arena_bytes)
        self.local.st = st
        return st

    # ---------------------------------------------------------- running
    def run(self, ph_values, debug=None):
        """Runs the program on placeholder values; returns the flat outputs
        (clones unless clone_outputs is False: then they live in the arena
        until this thread's next run)."""
        debug = self.debug if debug is None else debug
        if debug and self.by_root:
            raise ValueError("bufplan.torch: the debug mode does not check plans with recompute or offload copies")
        st = self._state()
        ref = self._reference(ph_values) if debug else None
        if debug:
            st.fill_nan()
        env = dict(zip(self.prog.placeholders, ph_values))
        env.update(self.prog.consts)
        values = {}
        host = {}
        with torch.no_grad():
            for step, op in enumerate(self.order):
                node = op.node
                for c, rop in self.before[step]:
                    self._bring_back(st, env, host, c, rop)
                args = map_arg(node.args, lambda n: env[n])
                kwargs = map_arg(node.kwargs, lambda n: env[n])
                if self.lib is not None:
                    out = self._call_planned(st, step, op, args, kwargs)
                else:
                    out = self._call_fallback(st, op, args, kwargs)
                env[node] = out
                for gi in op.getitems:
                    env[gi] = env[gi.args[0]][gi.args[1]]
                if debug and not op.uninitialized:
                    self._record(op, out, values)
                    self._compare(step, op, values, ref)
                for r, offload in self.after[step]:
                    if offload:
                        off, nb = self._at(r, step), self.prog.nbytes[r]
                        host[r] = st.mem[st.start + off:st.start + off + nb].clone()
                for n in self.release[step]:
                    env.pop(n, None)
        outs = []
        for n in self.out_nodes:
            v = None if n is None else env[n]
            outs.append(v.clone() if self.clone_outputs and isinstance(v, torch.Tensor) and st.holds(v) else v)
        return outs

    def _at(self, r, step):
        return self.where(r, step)

    def _bring_back(self, st, env, host, c, rop):
        """Copy c of storage c["tensor"] into the arena at c["offset"] (by
        running rop again, or from host memory), then every value of the
        storage rebound there."""
        r, off = c["tensor"], c["offset"]
        old = self.where(r, c["first"] - 1) if c["first"] > 0 else self.offset[r]
        if rop is None:
            nb = self.prog.nbytes[r]
            st.mem[st.start + off:st.start + off + nb].copy_(host.pop(r))
        else:
            import ctypes
            U64 = ctypes.c_uint64
            sizes, addrs = [], []
            for size, wh in rop.queue:
                sizes.append(size)
                addrs.append(st.base + off if wh[0] == "out" and self.root[wh[1]] == r else 0)
            n = max(1, len(sizes))
            self.lib.bpt_expect((U64 * n)(*sizes), (U64 * n)(*addrs), len(sizes))
            try:
                node = rop.node
                rop.node.target(*map_arg(node.args, lambda n: env[n]), **map_arg(node.kwargs, lambda n: env[n]))
            finally:
                self.lib.bpt_done()
        for nd in self.nodes_of.get(r, ()):
            t = env.get(nd)
            if not isinstance(t, torch.Tensor):
                continue
            delta = t.storage().data_ptr() - (st.base + old)
            es = t.element_size()
            raw = st.mem[st.start + off + delta:st.start + off + delta + t.storage().nbytes()].view(t.dtype)
            env[nd] = raw.as_strided(t.shape, t.stride(), raw.storage_offset() + t.storage_offset())
            assert es and env[nd].data_ptr() - st.base == off + delta + t.storage_offset() * es

    def _call_planned(self, st, step, op, args, kwargs):
        sizes, addrs = st.queue(step)
        self.lib.bpt_expect(sizes, addrs, len(self.q_sizes[step]))
        try:
            out = op.node.target(*args, **kwargs)
        finally:
            self.lib.bpt_done()
        flat = pytree.tree_flatten(out)[0] if not isinstance(out, torch.Tensor) else [out]
        tens = [t for t in flat if isinstance(t, torch.Tensor)]
        for tid, t in zip(op.outs, tens):
            off = self.where(tid, step)
            if off is None or tid not in op.fresh:
                continue
            got = t.storage().data_ptr() - st.base
            if got != off and 0 <= got < self.arena_bytes:
                raise RuntimeError("bufplan.torch: op %s (%s) put tensor %s at arena offset %d, the plan at %d "
                                   "(its allocations differ from the calibration run)"
                                   % (op.node.name, op.node.target, self.prog.names[tid], got, off))
        return out

    def _call_fallback(self, st, op, args, kwargs):
        """out= into the arena where the op has it, else compute and copy."""
        target = op.node.target
        packet = getattr(target, "_overloadpacket", None)
        if len(op.fresh) == 1 and len(op.outs) == 1 and packet is not None and hasattr(packet, "out") \
                and not getattr(op, "_no_out", False):
            dst = st.view(self.prog, op.fresh[0], self.offset[op.fresh[0]])
            if dst is not None:
                try:
                    r = packet.out(*args, **kwargs, out=dst)
                    self.fallback_stats["out_variant_ops"] += 1
                    return r
                except (RuntimeError, TypeError):
                    pass
        out = target(*args, **kwargs)
        flat, spec = pytree.tree_flatten(out)
        tens = [i for i, t in enumerate(flat) if isinstance(t, torch.Tensor)]
        for i, tid in zip(tens, op.outs):
            if tid in op.fresh and self.offset[tid] is not None:
                dst = st.view(self.prog, tid, self.offset[tid])
                if dst is not None:
                    dst.copy_(flat[i])
                    self.fallback_stats["copied_bytes"] += self.prog.nbytes[tid]
                    flat[i] = dst
        self.fallback_stats["copied_ops"] += 1
        return pytree.tree_unflatten(flat, spec) if not isinstance(out, torch.Tensor) else flat[0]

    # ---------------------------------------------------------- debug
    def _reference(self, ph_values):
        """Every tensor's value in an eager run of the graph in its traced
        order, from the same RNG state and buffers (put back afterwards)."""
        rng = torch.get_rng_state()
        saved = [(v, v.clone()) for v in ph_values if isinstance(v, torch.Tensor)]
        env = dict(zip(self.prog.placeholders, ph_values))
        env.update(self.prog.consts)
        ref = {}
        with torch.no_grad():
            for op in self.prog.ops:
                node = op.node
                out = node.target(*map_arg(node.args, lambda n: env[n]), **map_arg(node.kwargs, lambda n: env[n]))
                env[node] = out
                for gi in op.getitems:
                    env[gi] = env[gi.args[0]][gi.args[1]]
                self._record(op, out, ref, clone=True)
        torch.set_rng_state(rng)
        with torch.no_grad():
            for v, c in saved:
                v.copy_(c)
        return ref

    def _record(self, op, out, into, clone=False):
        flat = [out] if isinstance(out, torch.Tensor) else pytree.tree_flatten(out)[0]
        for tid, t in zip(op.outs, [t for t in flat if isinstance(t, torch.Tensor)]):
            into[tid] = t.detach().clone() if clone else t

    def _checked(self):
        """Per step, the tensors to compare after it (see the module comment)."""
        if getattr(self, "_check_lists", None) is not None:
            return self._check_lists
        nb, tp, offs = self.prog.nbytes, self.tp, self.offset
        planned = [t for t in range(len(tp)) if offs[t] is not None and nb[t] > 0 and tp[t][0] >= 0]
        lists = []
        final = len(self.order) - 1
        for step, op in enumerate(self.order):
            wrote = [(offs[t], offs[t] + nb[t]) for t in list(op.fresh) + ([op.ws] if op.ws >= 0 else [])
                     if offs[t] is not None and nb[t] > 0]
            # live after this step; one read for the last time here may have been written over in place
            live = [t for t in planned if tp[t][0] <= step < tp[t][1] or tp[t][0] == step or
                    (step == final and tp[t][1] == final)]
            lists.append(live if step == final else
                         [t for t in live if any(lo < offs[t] + nb[t] and offs[t] < hi for lo, hi in wrote)])
        self._check_lists = lists
        return lists

    def _compare(self, step, op, values, ref):
        for tid in self._checked()[step]:
            t = values.get(tid)
            if t is None:
                continue
            r = ref.get(tid)
            if r is None or torch.equal(_bits(t), _bits(r)):
                continue
            raise DebugMismatch(self._explain(step, op, tid))

    def _explain(self, step, op, tid):
        names, off, nb = self.prog.names, self.offset[tid], self.prog.nbytes[tid]
        lines = ["bufplan.torch debug: after step %d (op %s, %s) tensor %s differs from the eager run"
                 % (step, op.node.name, op.node.target, names[tid]),
                 "  it lives at steps %d..%d, arena offset %d, %d bytes" % (self.tp[tid][0], self.tp[tid][1], off, nb),
                 "  buffer history of bytes [%d, %d):" % (off, off + nb)]
        hist = []
        for t, (first, last, o, b, *_rest) in enumerate(self.tp):
            o = self.offset[t]
            if o is not None and first >= 0 and o < off + nb and off < o + max(b, 1) and b > 0:
                hist.append((first, last, o, b, t))
        for first, last, o, b, t in sorted(hist):
            lines.append("    steps %4d..%-4d [%d, %d) %s%s" % (first, last, o, o + b, names[t],
                                                                 "   <- this one" if t == tid else ""))
        return "\n".join(lines)


class _Arena:
    """One thread's arena: the uint8 tensor, its page-aligned base (strictly
    inside the tensor, so the allocator frees the tensor itself normally),
    the absolute address arrays of every op's queue."""

    def __init__(self, runner, nbytes):
        import ctypes
        self.nbytes = nbytes
        self.mem = torch.empty(nbytes + 2 * PAGE, dtype=torch.uint8)
        ptr = self.mem.data_ptr()
        self.base = (ptr // PAGE + 1) * PAGE
        self.start = self.base - ptr
        self.lib = runner.lib
        if self.lib is not None:
            if self.lib.bpt_arena_add(self.base, self.base + max(nbytes, 1)) != 0:
                raise RuntimeError("bufplan.torch: too many arenas registered at once (256)")
            weakref.finalize(self, self.lib.bpt_arena_remove, self.base)
        U64 = ctypes.c_uint64
        self.queues = []
        for sizes, offs in zip(runner.q_sizes, runner.q_offs):
            n = max(1, len(sizes))
            self.queues.append(((U64 * n)(*sizes), (U64 * n)(*[0 if o is None else self.base + o for o in offs])))

    def queue(self, step):
        return self.queues[step]

    def holds(self, t):
        p = t.storage().data_ptr()
        return self.base <= p < self.base + self.nbytes

    def fill_nan(self):
        n = self.nbytes // 4
        if n:
            self.mem[self.start:self.start + 4 * n].view(torch.float32).fill_(math.nan)

    def view(self, prog, tid, off):
        """A tensor with tid's calibrated layout over the arena at off (None when it cannot be)."""
        meta = prog.meta[tid]
        if meta is None or off is None:
            return None
        shape, stride, dtype, soff = meta
        es = torch.empty((), dtype=dtype).element_size()
        if soff != 0 or prog.nbytes[tid] % es or (self.start + off) % es:
            return None
        raw = self.mem[self.start + off:self.start + off + prog.nbytes[tid]].view(dtype)
        return raw.as_strided(shape, stride)
