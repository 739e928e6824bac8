# `bufplan verify` checks every claim a plan makes: a plan edited in one
# field (a kind, the arena size, the peak step, a count) is rejected with a
# message that names the field; a long chain of views is finalized in linear
# time.
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
