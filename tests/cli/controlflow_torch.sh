#!/usr/bin/env bash
# Control flow as PyTorch exports it: a scripted loop (torch.jit.script, then
# torch.onnx.export) whose body holds an If, planned, verified and run against
# the safe run.  Needs Debian's python3-torch; skipped, saying so, without it.
. "$(dirname "$0")/harness.bash"
PY=""
for p in /usr/bin/python3 python3; do "$p" -c "import torch, onnx" 2>/dev/null && { PY=$p; break; }; done
[ -n "$PY" ] || { echo "SKIP: python3-torch (with python3-onnx) is not installed"; exit 0; }
# torch.jit.script reads the modules' source: the exporter is a file
cat >"$tmp/export.py" <<'PYEOF'
import sys, warnings
import torch
warnings.filterwarnings("ignore")
d = sys.argv[1]

class LoopIf(torch.nn.Module):
    """M iterations (M = steps.size(0)); each applies a Linear, then relu or
    2*tanh depending on the sign of the sum: a Loop whose body holds an If."""
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

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
    """A data-dependent while loop (a Loop with a condition and no trip count)."""
    def forward(self, x):
        i = 0
        while bool(x.sum() < 100.0) and i < 8:
            x = x * 2 + 1
            i += 1
        return x

class Stacked(torch.nn.Module):
    """A loop that stacks its steps: a sequence carried through the Loop, which has no fixed size."""
    def forward(self, x, steps):
        ys = []
        for i in range(steps.size(0)):
            x = x * 2
            ys.append(x)
        return torch.stack(ys)

torch.manual_seed(0)
torch.onnx.export(torch.jit.script(LoopIf()), (torch.randn(2, 16), torch.zeros(5)), f"{d}/loopif.onnx", opset_version=16,
                  input_names=["x", "steps"], output_names=["y"])
torch.onnx.export(torch.jit.script(WhileLoop()), (torch.randn(4, 8),), f"{d}/while.onnx", opset_version=16,
                  input_names=["x"], output_names=["y"])
torch.onnx.export(torch.jit.script(Stacked()), (torch.randn(2, 4), torch.zeros(3)), f"{d}/stacked.onnx", opset_version=16,
                  input_names=["x", "steps"], output_names=["ys"])
PYEOF
"$PY" "$tmp/export.py" "$tmp" 2>"$tmp/export.log" || { cat "$tmp/export.log"; bad "torch export failed"; exit $fail; }
for m in loopif while; do
  "$CLI" plan "$tmp/$m.onnx" -o "$tmp/$m.json" >"$tmp/$m.txt" 2>&1 || { bad "$m: plan failed: $(cat "$tmp/$m.txt")"; continue; }
  grep -q "control flow" "$tmp/$m.txt" || bad "$m: no control flow in the report: $(cat "$tmp/$m.txt")"
  "$CLI" verify "$tmp/$m.onnx" "$tmp/$m.json" >/dev/null 2>&1 || bad "$m: the plan does not verify"
  for th in 1 2; do
    expect_msg 0 "bodies of control flow included" "$CLI" run "$tmp/$m.onnx" --verify --threads $th
  done
done
grep -q "control flow 2 ops" "$tmp/loopif.txt" || bad "loopif: expected the Loop and the If in it: $(cat "$tmp/loopif.txt")"
# a carried sequence has no fixed size: refused, naming the body input, not planned as nothing
expect_msg 2 "has no fixed size" "$CLI" plan "$tmp/stacked.onnx" --allow-dynamic
exit $fail
