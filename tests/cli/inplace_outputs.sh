# Graph outputs written in place.  The verifier accepts an output written at
# the final step over an input that dies there (a last bias Add: one buffer,
# not two), which is sound, and rejects a claim over a storage that is itself
# a graph output, over an external input, or over a storage a later op still
# reads.  The planner makes the final-step write itself (docs/ARCHITECTURE.md
# "In-place writes"), and its plans verify.
. "$(dirname "$0")/harness.bash"
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 0; }
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
T = lambda n: {"name": n, "shape": [1, 1024], "dtype": "f32"}
def graph(name, ops, outputs):
    names = sorted({n for o in ops for n in o["inputs"] + o["outputs"]} | {"x", "w", "b"})
    t = [T(n) | ({"shape": [1024, 1024]} if n == "w" else {}) for n in names]
    ops = [{"name": o["outputs"][0] + "_op", "type": o["type"], "inputs": o["inputs"], "outputs": o["outputs"]} for o in ops]
    json.dump({"format": "bufplan-graph", "version": 1, "name": name, "tensors": t, "ops": ops,
               "inputs": ["x"], "weights": ["w", "b"], "outputs": outputs}, open(f"{d}/{name}.json", "w"))
mm = {"type": "MatMul", "inputs": ["x", "w"], "outputs": ["h"]}
graph("bias", [mm, {"type": "Add", "inputs": ["h", "b"], "outputs": ["y"]}], ["y"])
graph("both", [mm, {"type": "Add", "inputs": ["h", "b"], "outputs": ["y"]}], ["h", "y"])
graph("ext", [mm, {"type": "Add", "inputs": ["x", "b"], "outputs": ["y"]}], ["h", "y"])
graph("later", [mm, {"type": "Relu", "inputs": ["h"], "outputs": ["r"]},
                {"type": "Add", "inputs": ["r", "h"], "outputs": ["y"]}], ["y"])
PY
alias_of() {  # PLAN TENSOR: the tensor's alias_of in the plan JSON
  python3 -c 'import json,sys; print(next(t["alias_of"] for t in json.load(open(sys.argv[1]))["tensors"] if t["name"] == sys.argv[2]))' "$1" "$2"
}
forge() {  # PLAN OUT CLAIM OUTFILE: OUT claims CLAIM's bytes (at its offset, if it has one)
  python3 - "$@" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); ts = {t["name"]: t for t in p["tensors"]}
out, claim = ts[sys.argv[2]], ts[sys.argv[3]]
out["alias_of"] = claim["name"]
if claim["offset"] is not None: out["offset"] = claim["offset"]
json.dump(p, open(sys.argv[4], "w"))
PY
}
for s in "-s given" "-s best" "-a color"; do
  "$CLI" plan "$tmp/bias.json" $s -q -o "$tmp/bias_p.json" || bad "plan bias $s"
  expect_msg 0 "the plan is sound" "$CLI" verify "$tmp/bias.json" "$tmp/bias_p.json"
  # the final Add's output over h, in one 4 KiB arena
  [ "$(alias_of "$tmp/bias_p.json" y)" = h ] || bad "bias $s: the final Add was not written over h"
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["arena_bytes"]; sys.exit(a != 4096)' "$tmp/bias_p.json" ||
    bad "bias $s: the arena is not one 4 KiB buffer"
done
# h is a graph output itself: the Add may not overwrite it
"$CLI" plan "$tmp/both.json" -q -o "$tmp/both_p.json" || bad "plan both"
[ "$(alias_of "$tmp/both_p.json" y)" = None ] || bad "y was written over h, a graph output"
forge "$tmp/both_p.json" y h "$tmp/both_f.json"
expect_msg 1 'is written in place over "h", a graph output' "$CLI" verify "$tmp/both.json" "$tmp/both_f.json"
# x is an external input: never overwritten
"$CLI" plan "$tmp/ext.json" -q -o "$tmp/ext_p.json" || bad "plan ext"
[ "$(alias_of "$tmp/ext_p.json" y)" = None ] || bad "y was written over x, an external input"
forge "$tmp/ext_p.json" y x "$tmp/ext_f.json"
expect_msg 1 'is written in place over "x", which is not in the arena' "$CLI" verify "$tmp/ext.json" "$tmp/ext_f.json"
# r is written over h's storage only where h dies: a claim at Relu is rejected
"$CLI" plan "$tmp/later.json" -s given -q -o "$tmp/later_p.json" || bad "plan later"
"$CLI" verify "$tmp/later.json" "$tmp/later_p.json" >/dev/null || bad "later: the plan does not verify"
forge "$tmp/later_p.json" r h "$tmp/later_f.json"
expect_msg 1 'but that storage is still read at step 2' "$CLI" verify "$tmp/later.json" "$tmp/later_f.json"
exit $fail
