"""Shared by the bufplan.torch tests: the import (or a SKIP line and exit 0
where python3-torch / torchvision cannot be imported), the check helpers, the
models, and bit-identity of a compiled run against eager."""
import copy
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
try:
    import torch
    import torchvision  # noqa: F401
except ImportError as e:
    print("SKIP: python3-torch and python3-torchvision are needed (%s)" % e)
    sys.exit(0)
import bufplan.torch as bt  # noqa: E402

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)
    return cond


def finish(name):
    print("%s: %s" % (name, "FAIL (%d)" % len(FAILS) if FAILS else "ok"), flush=True)
    return 1 if FAILS else 0


class Encoder(torch.nn.Module):
    """A transformer encoder (post-norm, GELU) and a linear head."""

    def __init__(self, layers=4, d=256, heads=4, ff=1024, dropout=0.0):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d, heads, ff, dropout=dropout, activation="gelu", batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, 16)

    def forward(self, x):
        return self.head(self.enc(x))


def model(name, small=True):
    """(module, example input) for a bench model; small: 32x32 images, few layers."""
    import torchvision.models as tm
    torch.manual_seed(0)
    if name == "transformer":
        m = Encoder(layers=2, d=64, heads=4, ff=128) if small else Encoder()
        return m, torch.randn(1 if small else 2, 32 if small else 128, m.head.in_features)
    img, batch = (32, 2) if small else (224, 2)   # batch 2: BatchNorm trains on 1x1 maps at 32
    if name == "vit_b_16":
        m = tm.vit_b_16(image_size=img) if not small else tm.VisionTransformer(
            image_size=img, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128)
    else:
        m = getattr(tm, name)()
    return m, torch.randn(batch, 3, img, img)


def identical_run(m, x, mode, debug=True, **kw):
    """Compiles m, runs it once against eager on a copy; True when the output
    (and in training the loss, every gradient and every buffer) is bit-identical."""
    ref = copy.deepcopy(m)
    m.train(mode == "train")
    ref.train(mode == "train")
    f = bt.compile(m, (x,), mode=mode, debug=debug, **kw)
    torch.manual_seed(1)
    if mode == "infer":
        with torch.no_grad():
            want = ref(x)
        torch.manual_seed(1)
        got = f(x)
        ok = check(torch.equal(got, want), "%s: output differs from eager" % type(m).__name__)
    else:
        want = ref(x).sum()
        want.backward()
        torch.manual_seed(1)
        got = f(x)
        ok = check(torch.equal(got, want), "%s: loss %r, eager %r" % (type(m).__name__, got.item(), want.item()))
        for (n, p), (_, q) in zip(m.named_parameters(), ref.named_parameters()):
            ok &= check(p.grad is not None and torch.equal(p.grad, q.grad), "%s: grad of %s differs" % (type(m).__name__, n))
        for (n, b), (_, c) in zip(m.named_buffers(), ref.named_buffers()):
            ok &= check(torch.equal(b, c), "%s: buffer %s differs after the step" % (type(m).__name__, n))
    return f, ok
