"""Capturing a PyTorch model as a graph of ATen ops (torch.fx), without
side effects.

Inference: make_fx(functionalize(f)) over f(params, buffers, inputs) =
functional_call(model, ...), so weights are graph inputs, in-place ops become
functional ones and views stay views.  Training: AOT autograd's joint graph
(functorch's create_joint_forward_backward over f's loss), traced once with
make_fx and once more through functionalize, as aot_function does; it maps
(primals, tangents) to (loss, gradients).

make_fx replaces an op that has a CompositeImplicitAutograd kernel by that
decomposition even where the op also has a CPU kernel, which is what eager
runs (silu_backward is one: its decomposition rounds differently).  While
tracing, such ops are kept as themselves (eager_kernels()), so the graph
computes what eager computes, bit for bit.  functorch's functionalize then
decomposes such ops once more, below Python; refuse_decompositions() puts the
one the bench models meet (silu_backward) back together after it.

Tracing runs the model for real: the RNG state and every module buffer
(BatchNorm's running statistics and batch counts) are saved before and put
back after, so capturing changes nothing the eager model would see.
"""
import contextlib

import torch
from torch.nn.utils import stateless
from torch.utils import _pytree as pytree

try:
    from functorch import make_fx, functionalize
except ImportError:  # a torch without functorch
    from torch.fx.experimental.proxy_tensor import make_fx
    functionalize = None


def default_loss(out):
    """The sum of every tensor in the model's output."""
    leaves = [t for t in pytree.tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
    if not leaves:
        raise TypeError("bufplan.torch: the model returned no tensor to take a loss of")
    total = leaves[0].sum()
    for t in leaves[1:]:
        total = total + t.sum()
    return total


@contextlib.contextmanager
def eager_kernels():
    """While tracing: an op with a CPU kernel is recorded as itself, not as
    its CompositeImplicitAutograd decomposition (eager runs the CPU kernel)."""
    ops = torch._ops.OpOverload
    orig = ops.decompose
    cpu = torch._C.DispatchKey.CPU

    def decompose(self, *args, **kwargs):
        if torch._C._dispatch_has_kernel_for_dispatch_key(self.name(), cpu):
            return NotImplemented
        return orig(self, *args, **kwargs)

    ops.decompose = decompose
    try:
        yield
    finally:
        ops.decompose = orig


@contextlib.contextmanager
def preserved_state(model):
    """Restores the RNG state and every buffer of model (by value) on exit."""
    rng = torch.get_rng_state()
    saved = [(b, b.detach().clone()) for b in model.buffers()]
    try:
        yield
    finally:
        torch.set_rng_state(rng)
        with torch.no_grad():
            for b, v in saved:
                b.copy_(v)


class Captured:
    """The traced graph module and what its placeholders are, in order:
    params, buffers, inputs, then (training) the tangent of the loss."""

    def __init__(self, gm, mode, params, buffers, n_inputs, out_spec):
        self.gm = gm
        self.mode = mode
        self.params = params            # [(name, Parameter)]
        self.buffers = buffers          # [(name, Tensor)]
        self.n_inputs = n_inputs
        self.out_spec = out_spec        # pytree spec of the model's output (infer)

    def roles(self):
        """One of 'param', 'buffer', 'input', 'tangent' per placeholder."""
        return (["param"] * len(self.params) + ["buffer"] * len(self.buffers) + ["input"] * self.n_inputs
                + (["tangent"] if self.mode == "train" else []))


def _check_inputs(example_inputs):
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, (tuple, list)):
        raise TypeError("bufplan.torch: example_inputs must be a tensor or a tuple of tensors, not %s"
                        % type(example_inputs).__name__)
    for i, x in enumerate(example_inputs):
        if not isinstance(x, torch.Tensor):
            raise TypeError("bufplan.torch: example input %d is a %s, not a tensor" % (i, type(x).__name__))
        if x.device.type != "cpu":
            raise ValueError("bufplan.torch: example input %d is on %s; the planned runner is CPU only" % (i, x.device))
    return tuple(example_inputs)


def capture(model, example_inputs, mode="infer", loss=None):
    """Traces model on example_inputs; returns a Captured.  mode "infer"
    traces the forward (under no_grad), "train" the joint forward + backward
    of loss(model(*inputs)) (loss defaults to default_loss)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError("bufplan.torch: model must be a torch.nn.Module, not %s" % type(model).__name__)
    if mode not in ("infer", "train"):
        raise ValueError("bufplan.torch: mode must be 'infer' or 'train', not %r" % (mode,))
    if functionalize is None:
        raise RuntimeError("bufplan.torch: this torch has no functorch.functionalize (PyTorch 1.13 or later needed)")
    inputs = _check_inputs(example_inputs)
    params = list(model.named_parameters())
    buffers = list(model.named_buffers())
    names = [n for n, _ in params] + [n for n, _ in buffers]
    np_, nb = len(params), len(buffers)
    spec = {}
    loss_fn = loss or default_loss

    def forward(*args):
        out = stateless.functional_call(model, dict(zip(names, args[:np_ + nb])), tuple(args[np_ + nb:]))
        flat, spec["out"] = pytree.tree_flatten(out)
        return flat

    with preserved_state(model), eager_kernels():
        if mode == "infer":
            prim = [p.detach() for _, p in params] + [b.detach().clone() for _, b in buffers] + list(inputs)
            with torch.no_grad():
                gm = make_fx(functionalize(forward))(*prim)
        else:
            from functorch._src.aot_autograd import create_joint_forward_backward

            def loss_of(*args):
                l = loss_fn(pytree.tree_unflatten(forward(*args), spec["out"]))
                if not isinstance(l, torch.Tensor) or l.numel() != 1:
                    raise TypeError("bufplan.torch: the loss must be a tensor with one element")
                return [l]

            joint = create_joint_forward_backward(loss_of)
            prim = ([p.detach().requires_grad_(p.requires_grad) for _, p in params]
                    + [b.detach().clone() for _, b in buffers] + [x.detach() for x in inputs])
            tangents = [torch.ones((), dtype=_loss_dtype(params, inputs))]
            first = make_fx(joint)(prim, tangents)

            def replay(p, t):
                return torch.fx.Interpreter(first).run(p, t)

            gm = make_fx(functionalize(replay))(prim, tangents)
    gm.graph.eliminate_dead_code()
    if refuse_decompositions(gm):
        gm.graph.eliminate_dead_code()
    gm.recompile()
    return Captured(gm, mode, params, buffers, len(inputs), spec.get("out"))


def refuse_decompositions(gm):
    """Replaces functionalize's decomposition of silu_backward(grad, x)
    (sigmoid, empty_like, fill 1, sub, mul x, add 1, mul, mul grad) by the op
    itself, as eager runs it; returns how many were replaced."""
    aten = torch.ops.aten
    n_done = 0
    for s in list(gm.graph.nodes):
        if s.op != "call_function" or s.target is not aten.sigmoid.default:
            continue
        x = s.args[0]
        users = list(s.users)
        e = next((u for u in users if u.target is aten.empty_like.default), None)
        if e is None or len(users) != 3 or len(e.users) != 1:
            continue
        f = next(iter(e.users))
        if f.target is not aten.fill.Scalar or f.args[1] != 1 or len(f.users) != 1:
            continue
        sub = next(iter(f.users))
        if sub.target is not aten.sub.Tensor or sub.args != (f, s) or len(sub.users) != 1:
            continue
        mx = next(iter(sub.users))
        if mx.target is not aten.mul.Tensor or mx.args != (x, sub) or len(mx.users) != 1:
            continue
        add = next(iter(mx.users))
        if add.target is not aten.add.Scalar or add.args != (mx, 1) or len(add.users) != 1:
            continue
        ms = next(iter(add.users))
        if ms.target is not aten.mul.Tensor or ms.args != (s, add) or len(ms.users) != 1:
            continue
        mg = next(iter(ms.users))
        if mg.target is not aten.mul.Tensor or len(mg.args) != 2 or mg.args[1] is not ms:
            continue
        with gm.graph.inserting_before(mg):
            sb = gm.graph.call_function(aten.silu_backward.default, (mg.args[0], x))
        mg.replace_all_uses_with(sb)
        for n in (mg, ms, add, mx, sub, f, e, s):
            gm.graph.erase_node(n)
        n_done += 1
    return n_done


def _loss_dtype(params, inputs):
    for _, p in params:
        if p.is_floating_point():
            return p.dtype
    return torch.float32
