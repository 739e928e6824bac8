#!/usr/bin/env bash
# Control flow: If / Loop / Scan bodies planned as nested plans in their op's
# reservation, verified, and run (digest kernels against the safe run).  The
# real model is Silero VAD v5 from ../shared/data/controlflow (its network sits
# inside an If with nested Ifs); the others are written with python3-onnx here.
. "$(dirname "$0")/harness.bash"
DATA=${BP_DATA:-$(dirname "$0")/../../../shared/data}
SILERO=$DATA/controlflow/silero_vad_v5.onnx
S=(--shape input=1x512 --shape state=2x1x128)

if [ -f "$SILERO" ]; then
  "$CLI" plan "$SILERO" "${S[@]}" -o "$tmp/sil.json" >"$tmp/sil.txt" 2>/dev/null || bad "silero: plan failed"
  grep -q "control flow 15 ops with bodies" "$tmp/sil.txt" || bad "silero: the report does not count the 15 control-flow ops: $(cat "$tmp/sil.txt")"
  grep -qE "[1-9][0-9]* tensors planned inside them" "$tmp/sil.txt" || bad "silero: no tensors planned inside the bodies"
  # the arena holds the largest tensor of any body; every body at its lower bound
  python3 - "$tmp/sil.json" <<'PYEOF' || bad "silero: nested plan figures"
import json, sys
d = json.load(open(sys.argv[1]))
def walk(p, depth):
    big, n = 0, 0
    assert p["arena_bytes"] == p["stats"]["lower_bound_bytes"], (p["graph"], p["arena_bytes"], p["stats"]["lower_bound_bytes"])
    for t in p["tensors"]:
        if t["offset"] is not None and t["kind"] in ("planned", "output"): big = max(big, t["bytes"]); n += 1
    for b in p.get("bodies", []):
        assert b["base"] + b["plan"]["arena_bytes"] <= p["arena_bytes"], b["op"]
        bb, bn = walk(b["plan"], depth + 1)
        big, n = max(big, bb), n + bn
    return big, n
big, n = walk(d, 0)
assert n > 100 and big >= 65536 and d["arena_bytes"] >= big, (n, big, d["arena_bytes"])
assert len(d["bodies"]) == 2 and {b["kind"] for b in d["bodies"]} == {"then", "else"}
PYEOF
  "$CLI" verify "$SILERO" "$tmp/sil.json" "${S[@]}" >/dev/null 2>&1 || bad "silero: the plan does not verify"
  # a body placed outside its reservation, and a body tensor moved onto a live one, are caught
  python3 - "$tmp/sil.json" "$tmp/bad1.json" "$tmp/bad2.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["bodies"][0]["base"] += 4096
json.dump(d, open(sys.argv[2], "w"))
d = json.load(open(sys.argv[1]))
def deepest(p):
    for b in p.get("bodies", []):
        if b["plan"]["arena_bytes"] > 0: return deepest(b["plan"]) or b["plan"]
    return None
p = deepest(d)
ts = [t for t in p["tensors"] if t["offset"] is not None and t["alias_of"] is None and t["bytes"] > 0]
a, b = ts[0], next(t for t in ts[1:] if t["first"] <= ts[0]["last"] and t["last"] >= ts[0]["first"])
b["offset"] = a["offset"]
for e in p["events"]:
    if e["tensor"] == b["name"]: e["offset"] = a["offset"]
json.dump(d, open(sys.argv[3], "w"))
PYEOF
  expect_msg 1 "body: base" "$CLI" verify "$SILERO" "$tmp/bad1.json" "${S[@]}"
  expect_msg 1 "overlap" "$CLI" verify "$SILERO" "$tmp/bad2.json" "${S[@]}"
  for th in 1 2; do
    expect_msg 0 "bodies of control flow included" "$CLI" run "$SILERO" "${S[@]}" --verify --threads $th
  done
  # the plan cache holds nested plans: the second run is a verified hit with the same plan
  "$CLI" plan "$SILERO" "${S[@]}" --cache "$tmp/pc" -o "$tmp/c1.json" >/dev/null 2>&1 || bad "silero: cached plan (miss) failed"
  "$CLI" plan "$SILERO" "${S[@]}" --cache "$tmp/pc" -o "$tmp/c2.json" >"$tmp/c2.txt" 2>&1 || bad "silero: cached plan (hit) failed"
  grep -q "plan cache   hit" "$tmp/c2.txt" || bad "silero: no cache hit: $(grep -v value_info "$tmp/c2.txt")"
  grep -q "warning: plan cache" "$tmp/c2.txt" && bad "silero: the cache warned: $(grep 'plan cache' "$tmp/c2.txt")"
  python3 -c "
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
def strip(d):
    d['stats'].pop('plan_seconds', None)
    for x in d.get('bodies', []): strip(x['plan'])
    return d
sys.exit(strip(a) != strip(b))" "$tmp/c1.json" "$tmp/c2.json" || bad "silero: the cached plan differs from the one planned"
  # viz draws the tensors inside the bodies
  "$CLI" viz "$SILERO" "${S[@]}" -o "$tmp/sil.svg" >/dev/null 2>&1 || bad "silero: viz failed"
  nb=$(grep -c '<rect class="body"' "$tmp/sil.svg")
  [ "$nb" -gt 100 ] || bad "silero: the SVG draws $nb body tensors"
  "$CLI" viz "$SILERO" "${S[@]}" -o "$tmp/sil.html" >/dev/null 2>&1 || bad "silero: viz html failed"
  grep -q '"bodies":\[\[' "$tmp/sil.html" || bad "silero: the page has no body tensors"
  # without shapes: unbound symbols are refused, not planned as zero
  expect_msg 2 "unbound" "$CLI" plan "$SILERO"
else
  echo "SKIP: $SILERO is missing"
fi

PY=""
for p in /usr/bin/python3 python3; do "$p" -c "import onnx, numpy" 2>/dev/null && { PY=$p; break; }; done
[ -n "$PY" ] || { echo "SKIP: python3-onnx is not installed"; exit $fail; }
"$PY" - "$tmp" <<'PYEOF'
import sys, onnx
from onnx import helper as h, TensorProto as T
d = sys.argv[1]
def save(g, name, opset=17):
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, f"{d}/{name}.onnx")
vi = h.make_tensor_value_info
# Loop of 5 iterations whose body holds an If: carried x, stacked y
then_g = h.make_graph([h.make_node("Relu", ["xi"], ["t_out"])], "then", [], [vi("t_out", T.FLOAT, [4, 8])])
else_g = h.make_graph([h.make_node("Neg", ["xi"], ["e_out"])], "else", [], [vi("e_out", T.FLOAT, [4, 8])])
body = h.make_graph([
    h.make_node("Cast", ["i"], ["i_f"], to=T.FLOAT),
    h.make_node("Greater", ["i_f", "half"], ["big"]),
    h.make_node("Add", ["x_in", "w"], ["xi"]),
    h.make_node("If", ["big"], ["x_out"], then_branch=then_g, else_branch=else_g),
    h.make_node("Identity", ["cond_in"], ["cond_out"]),
    h.make_node("Mul", ["x_out", "x_out"], ["y"]),
], "body", [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("x_in", T.FLOAT, [4, 8])],
   [vi("cond_out", T.BOOL, []), vi("x_out", T.FLOAT, [4, 8]), vi("y", T.FLOAT, [4, 8])])
g = h.make_graph([
    h.make_node("Constant", [], ["M"], value=h.make_tensor("M", T.INT64, [], [5])),
    h.make_node("Constant", [], ["c"], value=h.make_tensor("c", T.BOOL, [], [1])),
    h.make_node("Constant", [], ["half"], value=h.make_tensor("half", T.FLOAT, [], [2.0])),
    h.make_node("Relu", ["x0"], ["x1"]),
    h.make_node("Loop", ["M", "c", "x1"], ["xf", "ys"], body=body),
], "loopif", [vi("x0", T.FLOAT, [4, 8]), vi("w", T.FLOAT, [4, 8])], [vi("xf", T.FLOAT, None), vi("ys", T.FLOAT, None)])
save(g, "loopif")
# a Loop with neither a trip count nor a condition
g2 = h.make_graph([h.make_node("Loop", ["", "", "x0"], ["xf"], body=h.make_graph(
    [h.make_node("Identity", ["c_in"], ["c_out"]), h.make_node("Relu", ["x_in"], ["x_out"])], "b",
    [vi("i", T.INT64, []), vi("c_in", T.BOOL, []), vi("x_in", T.FLOAT, [4])], [vi("c_out", T.BOOL, []), vi("x_out", T.FLOAT, [4])]))],
    "noend", [vi("x0", T.FLOAT, [4])], [vi("xf", T.FLOAT, None)])
save(g2, "noend")
# a branch that reads an outer value nobody defines
g3 = h.make_graph([h.make_node("If", ["c0"], ["o"],
    then_branch=h.make_graph([h.make_node("Relu", ["ghost"], ["a"])], "t", [], [vi("a", T.FLOAT, [2])]),
    else_branch=h.make_graph([h.make_node("Relu", ["x0"], ["b"])], "e", [], [vi("b", T.FLOAT, [2])]))],
    "ghost", [vi("c0", T.BOOL, []), vi("x0", T.FLOAT, [2])], [vi("o", T.FLOAT, None)])
save(g3, "ghost")
# Ifs nested 40 deep
inner = h.make_graph([h.make_node("Relu", ["x0"], ["r0"])], "leaf", [], [vi("r0", T.FLOAT, [2])])
for k in range(40):
    leaf = h.make_graph([h.make_node("Relu", ["x0"], [f"e{k}"])], f"e{k}", [], [vi(f"e{k}", T.FLOAT, [2])])
    inner = h.make_graph([h.make_node("If", ["c0"], [f"r{k+1}"], then_branch=inner, else_branch=leaf)], f"lvl{k}", [],
                         [vi(f"r{k+1}", T.FLOAT, [2])])
g4 = h.make_graph(inner.node, "bomb", [vi("c0", T.BOOL, []), vi("x0", T.FLOAT, [2])], [vi("r40", T.FLOAT, None)])
save(g4, "bomb")
PYEOF

"$CLI" plan "$tmp/loopif.onnx" -o "$tmp/loopif.json" >"$tmp/loopif.txt" 2>&1 || bad "loopif: plan failed: $(cat "$tmp/loopif.txt")"
grep -q "control flow 2 ops" "$tmp/loopif.txt" || bad "loopif: expected 2 control-flow ops (the Loop and its If): $(cat "$tmp/loopif.txt")"
python3 - "$tmp/loopif.json" <<'PYEOF' || bad "loopif: the stacked output is not [5,4,8] f32 or the reservation misses the slots"
import json, sys
d = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in d["tensors"]}
assert t["ys"]["bytes"] == 5 * 4 * 8 * 4 and t["xf"]["bytes"] == 128, (t["ys"]["bytes"], t["xf"]["bytes"])
b = d["bodies"][0]
assert b["kind"] == "loop"
r = t["Loop_4#bodies"] if "Loop_4#bodies" in t else next(x for x in d["tensors"] if x["name"].endswith("#bodies"))
# slots: iteration (8 B), condition (1 B), carried x (128 B), each aligned to 256
assert b["base"] == r["offset"] + 3 * 256, (b["base"], r["offset"])
assert r["bytes"] >= 3 * 256 + b["plan"]["arena_bytes"]
PYEOF
"$CLI" verify "$tmp/loopif.onnx" "$tmp/loopif.json" >/dev/null 2>&1 || bad "loopif: the plan does not verify"
# the events CSV lists each body's events after its op's EXEC, offsets in the outer arena
"$CLI" plan "$tmp/loopif.onnx" --format csv -o "$tmp/loopif.csv" >/dev/null 2>&1 || bad "loopif: csv failed"
python3 - "$tmp/loopif.csv" "$tmp/loopif.json" <<'PYEOF' || bad "loopif: body events in the CSV"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
d = json.load(open(sys.argv[2]))
body = [r for r in rows if "/loop/" in r["op_name"]]
assert len(body) == len(d["bodies"][0]["plan"]["events"]) + sum(len(b["plan"]["events"]) for b in d["bodies"][0]["plan"].get("bodies", [])), len(body)
loop_exec = next(i for i, r in enumerate(rows) if r["event_type"] == "EXEC" and r["op_name"] == d["bodies"][0]["op"])
assert rows[loop_exec + 1]["op_name"].startswith(d["bodies"][0]["op"] + "/loop/")
base = d["bodies"][0]["base"]
for r in body:
    if r["offset"]: assert int(r["offset"]) >= base, r
PYEOF
for th in 1 2; do
  expect_msg 0 "bodies of control flow included" "$CLI" run "$tmp/loopif.onnx" --verify --threads $th
done
# the plan JSON states the control-flow counts, and a wrong one is refused
python3 - "$tmp/loopif.json" "$tmp/badcount.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["stats"]["n_control_flow"] == 2 and d["stats"]["n_body_planned"] > 0, d["stats"]
d["stats"]["n_control_flow"] = 3
json.dump(d, open(sys.argv[2], "w"))
PYEOF
expect_msg 2 "\"n_control_flow\" is 3, the bodies give 2" "$CLI" verify "$tmp/loopif.onnx" "$tmp/badcount.json"
python3 - "$tmp/loopif.json" "$tmp/badkind.json" "$tmp/nobodies.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["bodies"][0]["kind"] = "scan"
json.dump(d, open(sys.argv[2], "w"))
d = json.load(open(sys.argv[1]))
del d["bodies"]
json.dump(d, open(sys.argv[3], "w"))
PYEOF
expect_msg 2 "must be the loop body of op" "$CLI" verify "$tmp/loopif.onnx" "$tmp/badkind.json"
expect_msg 2 "\"bodies\" must be an array of 1 entries" "$CLI" verify "$tmp/loopif.onnx" "$tmp/nobodies.json"
"$CLI" gen chain -o "$tmp/chain.json" >/dev/null 2>&1 && "$CLI" plan "$tmp/chain.json" -o "$tmp/chainp.json" >/dev/null 2>&1 &&
  python3 -c "
import json, sys
d = json.load(open(sys.argv[1])); d['bodies'] = []; json.dump(d, open(sys.argv[1], 'w'))" "$tmp/chainp.json"
expect_msg 2 "the graph has no control flow" "$CLI" verify "$tmp/chain.json" "$tmp/chainp.json"
# what cannot be done with bodies is refused, not done wrongly
expect_msg 2 "backward pass through If, Loop or Scan" "$CLI" plan "$tmp/loopif.onnx" --training
expect_msg 2 "control flow" "$CLI" report "$tmp/loopif.onnx"
expect_msg 2 "neither a trip count nor a condition" "$CLI" plan "$tmp/noend.onnx"
expect_msg 2 "\"ghost\", which is not defined" "$CLI" plan "$tmp/ghost.onnx"
expect_msg 2 "nested" "$CLI" plan "$tmp/bomb.onnx"
exit $fail
