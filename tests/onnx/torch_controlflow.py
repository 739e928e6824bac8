"""Control flow as PyTorch exports it (torch.jit.script, then torch.onnx.export),
written as ONNX models for the CLI test and the control-flow bench.

    torch_controlflow.py DIR [--rows R] [--width W] [--steps M] [MODEL ...]

Models (all by default): loopif (input R x W; M iterations of a Linear W->W, then relu or
2*tanh by the sign of the sum: a Loop whose body holds an If), while (a
data-dependent while loop: a Loop with a condition and no trip count) and
stacked (a loop that stacks its steps into a sequence of no fixed size).
Each is written as DIR/MODEL.onnx.  Needs Debian's python3-torch."""
import argparse
import warnings

import torch

warnings.filterwarnings("ignore")


class LoopIf(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = torch.nn.Linear(width, width)

    def forward(self, x, steps):
        h = x
        for i in range(steps.size(0)):
            h = self.lin(h)
            if bool(h.sum() > 0):
                h = torch.relu(h)
            else:
                h = torch.tanh(h) * 2
        return h


class WhileLoop(torch.nn.Module):
    def forward(self, x):
        i = 0
        while bool(x.sum() < 100.0) and i < 8:
            x = x * 2 + 1
            i += 1
        return x


class Stacked(torch.nn.Module):
    def forward(self, x, steps):
        ys = []
        for i in range(steps.size(0)):
            x = x * 2
            ys.append(x)
        return torch.stack(ys)


def export(model, args, path, inputs, outputs):
    torch.onnx.export(torch.jit.script(model), args, path, opset_version=16,
                      input_names=inputs, output_names=outputs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--rows", type=int, default=2, help="rows of loopif's input (default 2)")
    ap.add_argument("--width", type=int, default=16, help="features of loopif's Linear (default 16)")
    ap.add_argument("--steps", type=int, default=5, help="trips of loopif and stacked (default 5)")
    ap.add_argument("models", nargs="*", help="loopif, while, stacked (default: all)")
    a = ap.parse_intermixed_args()
    known = ["loopif", "while", "stacked"]
    a.models = a.models or known
    for name in a.models:
        if name not in known:
            ap.error(f"unknown model {name!r} (known: {', '.join(known)})")
    torch.manual_seed(0)
    w, m = a.width, a.steps
    if "loopif" in a.models:
        export(LoopIf(w), (torch.randn(a.rows, w), torch.zeros(m)), f"{a.dir}/loopif.onnx", ["x", "steps"], ["y"])
    if "while" in a.models:
        export(WhileLoop(), (torch.randn(4, 8),), f"{a.dir}/while.onnx", ["x"], ["y"])
    if "stacked" in a.models:
        export(Stacked(), (torch.randn(2, 4), torch.zeros(m)), f"{a.dir}/stacked.onnx",
               ["x", "steps"], ["ys"])


if __name__ == "__main__":
    main()
