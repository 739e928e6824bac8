# `bufplan verify` checks every claim a plan makes: a plan edited in one
# field (a kind, the arena size, the peak step, a count) is rejected with a
# message that names the field; naive and aliasing saved agree with a
# re-derivation here; a long chain of views is finalized in linear time.
. "$(dirname "$0")/harness.bash"
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 0; }
"$CLI" gen resnet50 -o "$tmp/g.json" || bad "gen"
"$CLI" plan "$tmp/g.json" -o "$tmp/p.json" -q || bad "plan"
"$CLI" verify "$tmp/g.json" "$tmp/p.json" >/dev/null || bad "the untouched plan does not verify"
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
p = json.load(open(d + "/p.json"))
def forge(name, f):
    q = json.loads(json.dumps(p)); f(q); json.dump(q, open(f"{d}/{name}.json", "w"))
def kind(q):
    next(t for t in q["tensors"] if t["kind"] == "planned")["kind"] = "output"
forge("kind", kind)
forge("arena", lambda q: q.__setitem__("arena_bytes", 2**62))
forge("peak_hi", lambda q: q["stats"].__setitem__("peak_step", 2**31 - 1))
forge("peak_neg", lambda q: q["stats"].__setitem__("peak_step", -5))
forge("peak_off", lambda q: q["stats"].__setitem__("peak_step", 0))
forge("naive", lambda q: q["stats"].__setitem__("naive_bytes", q["stats"]["naive_bytes"] + 1))
forge("saved", lambda q: q["stats"].__setitem__("alias_saved_bytes", 0))
forge("dyn", lambda q: q["stats"].__setitem__("dynamic_bytes", 4096))
# a chain of 200,000 explicit views
n = 200000
t = [{"name": "x", "dtype": "f32", "shape": [16]}] + [{"name": f"v{i}", "dtype": "f32", "shape": [16], "view_of": ("x" if i == 0 else f"v{i-1}")} for i in range(n)]
o = [{"name": f"op{i}", "type": "Foo", "inputs": ["x" if i == 0 else f"v{i-1}"], "outputs": [f"v{i}"]} for i in range(n)]
json.dump({"format": "bufplan-graph", "version": 1, "tensors": t, "ops": o, "inputs": ["x"], "outputs": [f"v{n-1}"]}, open(d + "/views.json", "w"))
PY
# naive and aliasing saved, re-derived here from the graph and the plan (an
# oracle apart from src/plan/verify.c): naive = the aligned bytes of the tensors
# in the arena that are no view in the plan; aliasing saved = those of the
# tensors in the arena with an alias_of (views of planned tensors, in-place outputs)
"$CLI" gen transformer --layers 2 --seq 64 -o "$tmp/tr.json" || bad "gen transformer"
for a in "" "--no-alias" "--alignment 1" "-a naive --alignment 64"; do
  "$CLI" plan "$tmp/tr.json" $a -q -o "$tmp/tr_plan.json" || bad "plan transformer $a"
  python3 - "$tmp/tr.json" "$tmp/tr_plan.json" <<'PY' || bad "naive / aliasing saved of the transformer ($a) are not what the tensors give"
import json, sys
g, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
VIEW_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"}
view = {t["name"] for t in g["tensors"] if t.get("view_of")}
view |= {o["outputs"][0] for o in g["ops"] if o["type"] in VIEW_OPS and o["inputs"] and o["outputs"]}
al = p["alignment"] or 1
up = lambda b: (b + al - 1) // al * al
placed = [t for t in p["tensors"] if t["offset"] is not None]
naive = sum(up(t["bytes"]) for t in placed if not (t["name"] in view and t["alias_of"] is not None))
saved = sum(up(t["bytes"]) for t in placed if t["alias_of"] is not None)
st = p["stats"]
assert (st["naive_bytes"], st["alias_saved_bytes"]) == (naive, saved), (st, naive, saved)
assert st["n_views"] == sum(1 for t in p["tensors"] if t["name"] in view and t["alias_of"] is not None), st
assert p["arena_bytes"] <= naive, (p["arena_bytes"], naive)
PY
done
check() {  # NAME RC WORDS: verify the forged plan NAME, expect RC and WORDS in the message
  expect_msg "$2" "$3" "$CLI" verify "$tmp/g.json" "$tmp/$1.json"
}
check kind 1 "the plan says kind output, the graph makes it planned"
check arena 1 "is not the end of the highest placed tensor"
check peak_hi 2 '"peak_step": 2147483647 is out of range'
check peak_neg 2 '"peak_step": -5 is out of range'
check peak_off 1 "peak_step 0 is not a step where the live bytes reach their maximum"
check naive 1 "naive_bytes"
check saved 1 "alias_saved_bytes"
check dyn 1 "dynamic_bytes 4096 differs"
if ! timeout 120 "$CLI" plan "$tmp/views.json" -s given -q 2>"$tmp/err"; then
  bad "a chain of 200,000 views did not plan within 120 s: $(cat "$tmp/err")"
fi
exit $fail
