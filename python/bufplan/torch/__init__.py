"""bufplan.torch: PyTorch models run in one planned arena (docs/PYTHON.md).

    report = bufplan.torch.plan(model, (x,), mode="infer")   # plan + numbers
    f = bufplan.torch.compile(model, (x,), mode="infer")     # f(x) == model(x), bit for bit
    step = bufplan.torch.compile(model, (x,), mode="train", loss=fn)
    loss = step(x)                                           # and every p.grad, as loss.backward()

The model is captured as ATen ops (capture.py), calibrated and turned into
a bufplan graph (program.py), planned (by default `best` + `bestfit`), and
run by runner.py with the planned CPU allocator (allocator.py) serving every
output and workspace from the arena.  Plans are kept per input shape: in
memory, and in bufplan's plan cache on disk (cache_dir).
"""
import os
import threading
import time

import torch
from torch.utils import _pytree as pytree

import bufplan

from . import allocator
from . import capture as _capture
from .capture import preserved_state, default_loss
from .program import Program
from .runner import DebugMismatch, Runner

__all__ = ["plan", "compile", "Compiled", "DebugMismatch", "allocator_available", "default_loss"]


def allocator_available():
    """True when the planned CPU allocator is loaded; else allocator.why() says why."""
    return allocator.available()


def _options(options):
    if options is None:
        return bufplan.PlanOptions(sched="best", assign="bestfit", time_limit=10)
    if isinstance(options, dict):
        return bufplan.PlanOptions(**options)
    if isinstance(options, bufplan.PlanOptions):
        return options
    raise TypeError("bufplan.torch: options must be a bufplan.PlanOptions or a dict, not %s" % type(options).__name__)


def _placeholders(cap, model, inputs):
    vals = [p.detach() for _, p in cap.params] + [b for _, b in cap.buffers] + list(inputs)
    if cap.mode == "train":
        vals.append(torch.ones((), dtype=cap.tangent_dtype))
    return vals


class Entry:
    """One input shape's capture, program, plan and runner."""

    def __init__(self, model, inputs, mode, loss, options, cache, clone_outputs, debug):
        t0 = time.perf_counter()
        self.cap = _capture.capture(model, inputs, mode, loss)
        self.cap.tangent_dtype = next((p.dtype for _, p in self.cap.params if p.is_floating_point()), torch.float32)
        with preserved_state(model):
            vals = _placeholders(self.cap, model, inputs)
            rec = allocator.Recording() if allocator.available() else None
            if rec:
                with rec:
                    self.prog = Program(self.cap, vals, rec)
            else:
                self.prog = Program(self.cap, vals, _NoRecording())
        self.prog.env_calibration = None
        self.trace_seconds = time.perf_counter() - t0
        t1 = time.perf_counter()
        if options.engine is None:   # the torch profile: the plan is made, and verified, for what ATen does
            self.engine = bufplan.Engine.from_dict(self.prog.engine, "torch-aten")
            options = bufplan.PlanOptions.of(options, engine=self.engine)
        else:
            self.engine = options.engine
        if cache is not None:
            self.plan, self.cache_hit = cache.plan(self.prog.graph, "", options)
        else:
            self.plan, self.cache_hit = self.prog.graph.plan(options), False
        self.plan_seconds = time.perf_counter() - t1
        self.runner = Runner(self.prog, self.plan, clone_outputs=clone_outputs, debug=debug)


class _NoRecording:
    records = False

    def take(self):
        return []


def _cache(cache_dir):
    if cache_dir is False or cache_dir is None:
        return None
    return bufplan.PlanCache(cache_dir)


def _check_call(example, inputs):
    if len(inputs) != len(example):
        raise TypeError("bufplan.torch: called with %d inputs, the example had %d" % (len(inputs), len(example)))
    for i, (x, e) in enumerate(zip(inputs, example)):
        if not isinstance(x, torch.Tensor):
            raise TypeError("bufplan.torch: input %d is a %s, not a tensor" % (i, type(x).__name__))
        if x.dtype != e.dtype or x.dim() != e.dim() or x.device != e.device:
            raise ValueError("bufplan.torch: input %d is %s %s %s; the example was %s %s %s (the rank, dtype and "
                             "device must match; other sizes get a plan of their own)"
                             % (i, list(x.shape), x.dtype, x.device, list(e.shape), e.dtype, e.device))


class Compiled:
    """The callable compile() returns.  .report(inputs) gives the numbers of
    the plan for those inputs' shape; .entry(inputs) its plan and program."""

    def __init__(self, model, example_inputs, mode="infer", loss=None, options=None, cache_dir=None,
                 clone_outputs=True, debug=False, budget=None):
        if not isinstance(model, torch.nn.Module):
            raise TypeError("bufplan.torch: model must be a torch.nn.Module, not %s" % type(model).__name__)
        if mode not in ("infer", "train"):
            raise ValueError("bufplan.torch: mode must be 'infer' or 'train', not %r" % (mode,))
        if loss is not None and mode != "train":
            raise ValueError("bufplan.torch: loss= is for mode='train'")
        if loss is not None and not callable(loss):
            raise TypeError("bufplan.torch: loss must be callable")
        self.model, self.mode, self.loss = model, mode, loss
        self.options = _options(options)
        if budget is not None:
            self.options = bufplan.PlanOptions.of(self.options, budget=budget)
        self.cache = _cache(cache_dir)
        self.clone_outputs, self.debug = clone_outputs, debug
        self.example = _capture._check_inputs(example_inputs)
        self._entries = {}
        self._lock = threading.Lock()
        self.entry(self.example)

    def _key(self, inputs):
        return tuple((tuple(x.shape), x.dtype) for x in inputs)

    def entry(self, inputs):
        """The Entry for these inputs' shapes (planned on first use)."""
        _check_call(self.example, inputs)
        key = self._key(inputs)
        e = self._entries.get(key)
        if e is None:
            with self._lock:
                e = self._entries.get(key)
                if e is None:
                    e = Entry(self.model, inputs, self.mode, self.loss, self.options, self.cache,
                              self.clone_outputs, self.debug)
                    self._entries[key] = e
        return e

    def __call__(self, *inputs, debug=None):
        e = self.entry(inputs)
        vals = _placeholders(e.cap, self.model, inputs)
        outs = e.runner.run(vals, debug=debug)
        if self.mode == "infer":
            return pytree.tree_unflatten(outs, e.cap.out_spec)
        return self._write_grads(e, outs)

    def _write_grads(self, e, outs):
        loss = outs[0]
        grads = outs[1:1 + len(e.cap.params)]
        for (_, p), g in zip(e.cap.params, grads):
            if g is None or not p.requires_grad:
                continue
            if p.grad is None:
                p.grad = g if self.clone_outputs else g.clone()
            else:
                p.grad.add_(g)
        # what functionalized tracing leaves out: BatchNorm's batch count
        for m in self.model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.training and m.track_running_stats \
                    and m.num_batches_tracked is not None:
                m.num_batches_tracked.add_(1)
        return loss

    def report(self, inputs=None):
        """arena, lower bound, the traced order's peak, eager's peaks, ..."""
        return _report(self.model, self.entry(inputs or self.example), inputs or self.example, self.mode,
                       self.loss)


def compile(model, example_inputs, mode="infer", loss=None, options=None, cache_dir=None, clone_outputs=True,
            debug=False, budget=None):
    """A callable that runs model (mode "infer") or one training step of
    loss(model(*inputs)) (mode "train": returns the loss and adds each
    parameter's gradient to .grad) in one planned arena.  options: a
    bufplan.PlanOptions or a dict of its fields (default best + bestfit);
    cache_dir: bufplan's plan cache directory (None: plans kept in memory
    only); clone_outputs=False returns the outputs in the arena (valid until
    the next call on the same thread); debug=True checks every op against
    an eager run (runner.py); budget: the arena's bytes at most (an int or
    "40M"): where no order fits, the plan recomputes or offloads storages
    (options' fallback) and the callable replays those copies."""
    return Compiled(model, example_inputs, mode, loss, options, cache_dir, clone_outputs, debug, budget)


def _eager_peak(model, inputs, mode, loss):
    """Eager's peak above what was live before: (live bytes, the allocator's figure), or (None, None)."""
    if not allocator.available():
        return None, None
    with preserved_state(model):
        grads = [(p, p.grad) for p in model.parameters()]
        for p, _ in grads:
            p.grad = None
        try:
            if mode == "infer":
                with torch.no_grad():
                    _, live, usable = allocator.measure_peak(lambda: model(*inputs))
            else:
                _, live, usable = allocator.measure_peak(lambda: (loss or default_loss)(model(*inputs)).backward())
        finally:
            for p, g in grads:
                p.grad = g
    return live, usable


def _report(model, e, inputs, mode, loss):
    g, p = e.prog.graph, e.plan
    traced = [op.id for op in e.prog.ops]
    traced_peak, _ = g.peak(traced, alignment=p.alignment)
    _, info = g.schedule(sched="given", alignment=p.alignment)
    live, usable = _eager_peak(model, inputs, mode, loss)
    ws = sum(op.ws_bytes for op in e.prog.ops)
    return {"mode": mode, "arena_bytes": p.arena_bytes, "lower_bound_bytes": p.lower_bound_bytes,
            "traced_peak_bytes": traced_peak, "eager_live_peak_bytes": live, "eager_allocator_peak_bytes": usable,
            "workspace_bytes": ws, "engine": p.engine_name, "n_ops": g.n_ops, "n_tensors": g.n_tensors, "sched": p.sched, "assign": p.assign,
            "trace_seconds": e.trace_seconds, "plan_seconds": e.plan_seconds, "cache_hit": e.cache_hit,
            "allocator": allocator.available(), "allocator_why": allocator.why()}


def plan(model, example_inputs, mode="infer", loss=None, options=None, cache_dir=None):
    """Captures and plans model; returns (bufplan.Plan, report dict: arena,
    the plan's lower bound, the traced order's peak, eager's peak as live
    bytes and as the allocator's figure, workspaces, timings)."""
    c = Compiled(model, example_inputs, mode, loss, options, cache_dir)
    e = c.entry(c.example)
    return e.plan, c.report()
