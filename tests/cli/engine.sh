# --engine NAME|FILE: the built-in profiles plan and verify (a plan carries its
# profile, so `verify` needs no flag for it); strict keeps the Reshape views
# and writes nothing in place; a bad name, an unknown key and a malformed op
# type are refused naming them; the config file's "engine" key; graph
# workspaces reach the plan as kind "workspace" and the run verifies; a
# profile file's Conv formula gives an ONNX Conv its workspace (ort-cpu gives
# none), and the plan carries that profile to `verify`.
. "$(dirname "$0")/harness.bash"
"$CLI" gen resnet50 -o "$tmp/g.json" || bad "gen"
for e in default strict ort-cpu; do
  "$CLI" plan "$tmp/g.json" --engine "$e" -q -o "$tmp/p_$e.json" || bad "plan --engine $e"
  "$CLI" verify "$tmp/g.json" "$tmp/p_$e.json" --engine "$e" >/dev/null || bad "the $e plan does not verify"
  "$CLI" run "$tmp/g.json" --engine "$e" --verify --threads 2 >/dev/null 2>&1 || bad "run --engine $e --verify"
done
grep -q '"engine"' "$tmp/p_default.json" && bad "a default plan names an engine"
grep -q '"name": "strict"' "$tmp/p_strict.json" || bad "the strict plan does not carry its profile"
a_def=$(sed -n 's/^ *"arena_bytes": *\([0-9]*\).*/\1/p' "$tmp/p_default.json" | head -1)
a_str=$(sed -n 's/^ *"arena_bytes": *\([0-9]*\).*/\1/p' "$tmp/p_strict.json" | head -1)
[ "$a_str" -ge "$a_def" ] || bad "strict's arena $a_str is below the default's $a_def"
expect_msg 2 'engine profile "tensorrt"' "$CLI" plan "$tmp/g.json" --engine tensorrt
printf '{"format": "bufplan-engine", "version": 1, "ops": {"Relu": {"inplce": [[0, 0]]}}}' >"$tmp/e1.json"
expect_msg 2 'unknown key "inplce" (did you mean "inplace"?)' "$CLI" plan "$tmp/g.json" --engine "$tmp/e1.json"
printf '{"format": "bufplan-engine", "version": 1, "ops": {"Re lu": {}}}' >"$tmp/e2.json"
expect_msg 2 '"Re lu" is not an op type' "$CLI" plan "$tmp/g.json" --engine "$tmp/e2.json"
printf '{"format": "bufplan-config", "version": 1, "engine": "strict"}' >"$tmp/c.json"
"$CLI" plan "$tmp/g.json" --config "$tmp/c.json" -q -o "$tmp/p_c.json" || bad "plan --config with an engine"
cmp -s <(grep -v plan_seconds "$tmp/p_c.json") <(grep -v plan_seconds "$tmp/p_strict.json") || bad "the config's engine is not --engine's"
# workspaces from the graph file
cat >"$tmp/w.json" <<'J'
{"format": "bufplan-graph", "version": 1, "name": "w",
 "tensors": [{"name": "x", "bytes": 4096}, {"name": "y", "bytes": 4096}, {"name": "z", "bytes": 4096}],
 "ops": [{"name": "conv", "type": "Conv", "inputs": ["x"], "outputs": ["y"], "workspace": [8192, 512]},
         {"name": "relu", "type": "Relu", "inputs": ["y"], "outputs": ["z"], "workspace": 100}],
 "inputs": ["x"], "outputs": ["z"]}
J
"$CLI" plan "$tmp/w.json" -q -o "$tmp/pw.json" || bad "plan with workspaces"
[ "$(grep -c '"kind": "workspace"' "$tmp/pw.json")" = 3 ] || bad "the plan does not list 3 workspaces"
"$CLI" verify "$tmp/w.json" "$tmp/pw.json" >/dev/null || bad "the workspace plan does not verify"
"$CLI" run "$tmp/w.json" --verify >/dev/null 2>&1 || bad "run --verify with workspaces"
printf '%s' '{"format": "bufplan-graph", "version": 1, "tensors": [{"name": "x", "bytes": 4}, {"name": "y", "bytes": 4}], "ops": [{"name": "c", "type": "Conv", "inputs": ["x"], "outputs": ["y"], "workspace": [1, "big"]}], "inputs": ["x"], "outputs": ["y"]}' >"$tmp/wb.json"
expect_msg 2 '"workspace"' "$CLI" plan "$tmp/wb.json"
# ONNX: a Conv workspace formula from a profile file (ort-cpu plus an im2col)
m=${BP_DATA:-../shared/data}/onnx/torchvision/resnet18.onnx
if [ -f "$m" ]; then
  "$CLI" plan "$m" --dim N=1 --engine ort-cpu -q -o "$tmp/po.json" || bad "plan resnet18 --engine ort-cpu"
  grep -q '#ws0"' "$tmp/po.json" && bad "ort-cpu gives resnet18 a Conv workspace"
  /usr/bin/python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["engine"]; e["name"]="ort-im2col"
e["ops"]["Conv"]={"workspace": "in1[1] * in1[2] * in1[3] * out0[2] * out0[3]"}; json.dump(e, open(sys.argv[2], "w"))' "$tmp/po.json" "$tmp/ew.json"
  "$CLI" plan "$m" --dim N=1 --engine "$tmp/ew.json" -q -o "$tmp/pr.json" || bad "plan resnet18 --engine FILE with a Conv formula"
  grep -q '#ws0", "bytes": [1-9]' "$tmp/pr.json" || bad "no Conv workspace in the plan of resnet18"
  "$CLI" verify "$m" "$tmp/pr.json" --dim N=1 --engine "$tmp/ew.json" >/dev/null || bad "the workspace plan of resnet18 does not verify"
  # without --engine: the profile the plan carries gives the graph its Conv workspaces
  expect_msg 0 "the plan is sound" "$CLI" verify "$m" "$tmp/pr.json" --dim N=1
  # a profile of the wrong kind in the plan file is refused, naming the key
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["engine"]=7; json.dump(d, open(sys.argv[2], "w"))' "$tmp/pr.json" "$tmp/pr_bad.json"
  expect_msg 2 '"engine" must be an engine profile object' "$CLI" verify "$m" "$tmp/pr_bad.json" --dim N=1
fi
exit $fail
