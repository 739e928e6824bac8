#!/usr/bin/env bash
# CLI tests for `bufplan plan` and `bufplan verify`: outputs, formats and exit
# codes (0 ok, 1 does not fit / unsound, 2 bad input or usage).
set -u
CLI=${BP_CLI:?BP_CLI not set}
DATA=${BP_DATA:-../shared/data}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
expect_rc() { # expect_rc WANT DESC CMD...
  local want=$1 desc=$2; shift 2
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  [ "$rc" = "$want" ] || fail "$desc: exit $rc, want $want; stderr: $(head -c 400 "$T/err")"
}

cat >"$T/g.json" <<'JSON'
{"format": "bufplan-graph", "version": 1, "name": "tiny",
 "tensors": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "f32"},
             {"name": "w", "shape": [8, 3, 3, 3], "dtype": "f32"},
             {"name": "a", "shape": [1, 8, 8, 8], "dtype": "f32"},
             {"name": "b", "shape": [1, 8, 8, 8], "dtype": "f32"},
             {"name": "c", "shape": [1, 8, 8, 8], "dtype": "f32"},
             {"name": "y", "bytes": 2048}],
 "ops": [{"name": "conv", "type": "Conv", "inputs": ["x", "w"], "outputs": ["a"]},
         {"name": "c1", "type": "Conv", "inputs": ["a"], "outputs": ["b"]},
         {"name": "c2", "type": "Conv", "inputs": ["b"], "outputs": ["c"]},
         {"name": "head", "type": "Gemm", "inputs": ["c"], "outputs": ["y"]}],
 "inputs": ["x"], "weights": ["w"], "outputs": ["y"]}
JSON

expect_rc 0 "plan text" "$CLI" plan "$T/g.json"
grep -q "naive" "$T/out" && grep -q "lower bound" "$T/out" && grep -q "verified" "$T/out" || fail "plan report lacks naive/lower bound/verified: $(cat "$T/out")"
expect_rc 0 "plan json" "$CLI" plan "$T/g.json" -o "$T/plan.json"
python3 - "$T/plan.json" <<'PY' || fail "plan.json does not follow the format"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["format"] == "bufplan-plan" and p["version"] == 1 and p["graph"] == "tiny"
assert p["schedule"] == ["conv", "c1", "c2", "head"], p["schedule"]
t = {x["name"]: x for x in p["tensors"]}
assert t["a"]["bytes"] == 2048 and t["a"]["kind"] == "planned" and t["a"]["first"] == 0 and t["a"]["last"] == 1
assert t["x"]["offset"] is None and t["x"]["kind"] == "input"
assert t["y"]["kind"] == "output"
assert p["arena_bytes"] == 4096, p["arena_bytes"]
ev = [(e["type"], e.get("tensor"), e["op"]) for e in p["events"]]
assert ev[0] == ("ALLOC", "a", "conv") and ev[1] == ("EXEC", None, "conv"), ev[:3]
assert p["stats"]["naive_bytes"] == 8192 and p["stats"]["lower_bound_bytes"] == 4096
PY
expect_rc 0 "verify sound plan" "$CLI" verify "$T/g.json" "$T/plan.json"
grep -q "sound" "$T/out" || fail "verify does not say sound"
# break the plan: b over a while both live
python3 - "$T/plan.json" "$T/bad.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
off = {t["name"]: t["offset"] for t in p["tensors"]}
for t in p["tensors"]:
    if t["name"] == "b": t["offset"] = off["a"]
json.dump(p, open(sys.argv[2], "w"))
PY
expect_rc 1 "verify broken plan" "$CLI" verify "$T/g.json" "$T/bad.json"
grep -q '"a"' "$T/err" && grep -q '"b"' "$T/err" && grep -q overlap "$T/err" || fail "verify message does not name a and b: $(cat "$T/err")"
expect_rc 0 "plan csv" "$CLI" plan "$T/g.json" --format csv -o "$T/ev.csv"
head -1 "$T/ev.csv" | grep -qx "event_id,event_type,tensor_name,buffer_index,offset,op_name" || fail "csv header: $(head -1 "$T/ev.csv")"
for a in naive color bestfit; do
  expect_rc 0 "assign $a" "$CLI" plan "$T/g.json" -a "$a" -s kahn
done
# budget: 4096 is needed; 3000 does not fit -> exit 1 with a message
expect_rc 1 "budget too small" "$CLI" plan "$T/g.json" --budget 3000
grep -q "budget" "$T/err" || fail "budget message: $(cat "$T/err")"
expect_rc 0 "budget fits" "$CLI" plan "$T/g.json" --budget 4K
# usage errors and bad input -> 2
expect_rc 2 "no graph" "$CLI" plan
expect_rc 2 "unknown option" "$CLI" plan "$T/g.json" --bogus
expect_rc 2 "unknown scheduler" "$CLI" plan "$T/g.json" -s nope
expect_rc 2 "bad alignment" "$CLI" plan "$T/g.json" --alignment 3
expect_rc 2 "missing file" "$CLI" plan "$T/missing.json"
grep -q "missing.json" "$T/err" || fail "missing file message does not name it"
echo '{"format": "bufplan-graph", "version": 1, "tensors": [' >"$T/trunc.json"
expect_rc 2 "truncated json" "$CLI" plan "$T/trunc.json"
grep -q "trunc.json" "$T/err" || fail "truncated json message: $(cat "$T/err")"
expect_rc 2 "unknown command" "$CLI" frobnicate
expect_rc 0 "help" "$CLI" plan --help
expect_rc 0 "version" "$CLI" --version
# a real training graph plans and verifies with views aliased
if [ -f "$DATA/graphs/training/resnet18.json" ]; then
  expect_rc 0 "resnet18 training" "$CLI" plan "$DATA/graphs/training/resnet18.json" -s given -o "$T/r18.json"
  expect_rc 0 "verify resnet18" "$CLI" verify "$DATA/graphs/training/resnet18.json" "$T/r18.json"
fi
[ $fails = 0 ] && echo "cli plan: all passed"
exit $((fails > 0))
