#!/usr/bin/env bash
# Control flow as PyTorch exports it: a scripted loop (torch.jit.script, then
# torch.onnx.export) whose body holds an If, planned, verified and run against
# the safe run.  Needs Debian's python3-torch; skipped, saying so, without it.
. "$(dirname "$0")/harness.bash"
PY=""
for p in /usr/bin/python3 python3; do "$p" -c "import torch, onnx" 2>/dev/null && { PY=$p; break; }; done
[ -n "$PY" ] || { echo "SKIP: python3-torch (with python3-onnx) is not installed"; exit 0; }
# the models: tests/onnx/torch_controlflow.py (also the control-flow bench's)
"$PY" "$(dirname "$0")/../onnx/torch_controlflow.py" "$tmp" 2>"$tmp/export.log" || { cat "$tmp/export.log"; bad "torch export failed"; exit $fail; }
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
