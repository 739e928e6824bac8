#!/usr/bin/env bash
# bench/run.sh controlflow [--quick] — models with control flow (If, Loop,
# Scan): for each model and strategy side by side, the planned arena, its
# ratio to the lower bound of its order (the outer plan, whose reservations
# hold the nested plans), the control-flow ops and the tensors
# planned inside bodies, planning time, and whether run --verify (digest
# kernels against the safe run, bodies included) passes.  Models: Silero VAD
# v5 from shared/data/controlflow, and a Loop whose body holds an If written
# here with python3-onnx (and, with python3-torch, a scripted loop exported by
# torch.onnx).  Prints a Markdown table.
set -euo pipefail
cli="$BP_BUILD/bufplan"
here=$(cd "$(dirname "$0")" && pwd)
data=${BP_DATA:-$(cd "$(dirname "$0")/../../.." && pwd)/shared/data}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PY=""
for p in /usr/bin/python3 python3; do "$p" -c "import onnx" 2>/dev/null && { PY=$p; break; }; done
models=()
if [ -f "$data/controlflow/silero_vad_v5.onnx" ]; then
  models+=("silero_vad_v5|$data/controlflow/silero_vad_v5.onnx|--shape input=1x512 --shape state=2x1x128")
fi
if [ -n "$PY" ]; then
  "$PY" - "$tmp" <<'PYEOF'
import sys, onnx
from onnx import helper as h, TensorProto as T
vi = h.make_tensor_value_info
then_g = h.make_graph([h.make_node("Relu", ["xi"], ["t"])], "then", [], [vi("t", T.FLOAT, [64, 256])])
else_g = h.make_graph([h.make_node("Neg", ["xi"], ["e"])], "else", [], [vi("e", T.FLOAT, [64, 256])])
body = h.make_graph([
    h.make_node("Cast", ["i"], ["i_f"], to=T.FLOAT), h.make_node("Greater", ["i_f", "half"], ["big"]),
    h.make_node("MatMul", ["x_in", "w"], ["xi"]), h.make_node("If", ["big"], ["x_out"], then_branch=then_g, else_branch=else_g),
    h.make_node("Identity", ["c_in"], ["c_out"]), h.make_node("Mul", ["x_out", "x_out"], ["y"])], "body",
    [vi("i", T.INT64, []), vi("c_in", T.BOOL, []), vi("x_in", T.FLOAT, [64, 256])],
    [vi("c_out", T.BOOL, []), vi("x_out", T.FLOAT, [64, 256]), vi("y", T.FLOAT, [64, 256])])
g = h.make_graph([
    h.make_node("Constant", [], ["M"], value=h.make_tensor("M", T.INT64, [], [8])),
    h.make_node("Constant", [], ["c"], value=h.make_tensor("c", T.BOOL, [], [1])),
    h.make_node("Constant", [], ["half"], value=h.make_tensor("half", T.FLOAT, [], [4.0])),
    h.make_node("Relu", ["x0"], ["x1"]), h.make_node("Loop", ["M", "c", "x1"], ["xf", "ys"], body=body)],
    "loop_if", [vi("x0", T.FLOAT, [64, 256]), vi("w", T.FLOAT, [256, 256])], [vi("xf", T.FLOAT, None), vi("ys", T.FLOAT, None)])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]); m.ir_version = 8
onnx.save(m, sys.argv[1] + "/loop_if.onnx")
PYEOF
  models+=("loop_if (onnx.helper, 8 trips)|$tmp/loop_if.onnx|")
  if "$PY" -c "import torch" 2>/dev/null; then
    "$PY" "$here/../../tests/onnx/torch_controlflow.py" "$tmp" --rows 64 --width 256 --steps 8 loopif 2>/dev/null &&
      models+=("torch_loop_if (torch.jit.script)|$tmp/loopif.onnx|")
  fi
fi
[ ${#models[@]} -gt 0 ] || { echo "controlflow: no model (shared/data/controlflow missing and no python3-onnx): skipped"; exit 0; }
strategies=("best bestfit" "kahn bestfit" "given color" "best naive")
echo "| model | schedule + assign | arena | arena / lower bound | control-flow ops | body tensors | plan ms | run --verify |"
echo "|---|---|---:|---:|---:|---:|---:|---|"
for m in "${models[@]}"; do
  IFS='|' read -r name path flags <<<"$m"
  for st in "${strategies[@]}"; do
    set -- $st
    # shellcheck disable=SC2086
    if ! "$cli" plan "$path" $flags -s "$1" -a "$2" -o "$tmp/p.json" >"$tmp/p.txt" 2>/dev/null; then
      echo "| $name | $1 + $2 | failed | | | | | |"; continue
    fi
    v=failed
    # shellcheck disable=SC2086
    "$cli" run "$path" $flags -s "$1" -a "$2" --verify >/dev/null 2>&1 && v=ok
    python3 - "$tmp/p.json" "$name" "$1 + $2" "$v" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1])); s = d["stats"]
mib = lambda b: "%.1f KiB" % (b / 1024) if b < 1 << 20 else "%.2f MiB" % (b / 1048576)
lb = s["lower_bound_bytes"]
print("| %s | %s | %s | %s | %d | %d | %.3f | %s |" % (sys.argv[2], sys.argv[3], mib(d["arena_bytes"]),
      "%.3f" % (d["arena_bytes"] / lb) if lb else "-", s.get("n_control_flow", 0), s.get("n_body_planned", 0),
      s["plan_seconds"] * 1e3, sys.argv[4]))
PYEOF
  done
done
