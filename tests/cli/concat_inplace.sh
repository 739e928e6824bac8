# --concat-inplace: the diamond's Concat inputs are written into their
# slices (a smaller arena than without, "view_offset" in the plan JSON, the
# plan verifies and runs like safe mode on 1 and 3 threads); a plan whose
# slice is moved, or claims an offset without a storage, is refused naming
# the tensor; a negative view_offset and a config value of the wrong type are
# bad input (exit 2, the key named).
. "$(dirname "$0")/harness.bash"
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 0; }
"$CLI" gen diamond -o "$tmp/g.json" || bad "gen"
arena() { "$CLI" plan "$tmp/g.json" "$@" | awk '$1 == "arena" { print $2 $3 }'; }
a0=$(arena) a1=$(arena --concat-inplace)
[ "$a0" = "3.8MiB" ] || bad "arena without --concat-inplace: $a0"
[ "$a1" = "2.9MiB" ] || bad "arena with --concat-inplace: $a1"
"$CLI" plan "$tmp/g.json" --concat-inplace -o "$tmp/p.json" -q || bad "plan -o"
grep -q '"view_offset": 1605632' "$tmp/p.json" || bad "the plan JSON has no view_offset for C: $(grep -o '"name": "C"[^}]*' "$tmp/p.json")"
"$CLI" plan "$tmp/g.json" -o "$tmp/p0.json" -q || bad "plan -o without"
grep -q view_offset "$tmp/p0.json" && bad "view_offset written without --concat-inplace"
expect_msg 0 "the plan is sound" "$CLI" verify "$tmp/g.json" "$tmp/p.json"
for th in 1 3; do
  expect_msg 0 "matches the safe run" "$CLI" run "$tmp/g.json" --concat-inplace --verify --threads $th
done
expect_msg 0 "arena 2.9 MiB" "$CLI" run "$tmp/g.json" --concat-inplace
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
p = json.load(open(d + "/p.json"))
def forge(name, f):
    q = json.loads(json.dumps(p)); f(q); json.dump(q, open(f"{d}/{name}.json", "w"))
def tensor(q, n): return next(t for t in q["tensors"] if t["name"] == n)
forge("moved", lambda q: tensor(q, "C").__setitem__("view_offset", 1605632 - 256))
forge("neg", lambda q: tensor(q, "C").__setitem__("view_offset", -5))
def orphan(q):
    t = tensor(q, "A"); t["view_offset"] = 256
forge("orphan", orphan)
PY
expect_msg 1 'tensor "C" sits 1605376 bytes into the storage of "D", but it is no Concat input' "$CLI" verify "$tmp/g.json" "$tmp/moved.json"
expect_msg 2 '"view_offset" is negative' "$CLI" verify "$tmp/g.json" "$tmp/neg.json"
expect_msg 2 'tensor "A": "view_offset" 256 without "alias_of"' "$CLI" verify "$tmp/g.json" "$tmp/orphan.json"
echo '{"format": "bufplan-config", "version": 1, "concat_inplace": "yes"}' >"$tmp/c.json"
expect_msg 2 'concat_inplace' "$CLI" plan "$tmp/g.json" --config "$tmp/c.json"
echo '{"format": "bufplan-config", "version": 1, "concat_inplace": true}' >"$tmp/c.json"
[ "$("$CLI" plan "$tmp/g.json" --config "$tmp/c.json" | awk '$1 == "arena" { print $2 $3 }')" = "2.9MiB" ] || bad "config key concat_inplace not applied"
exit $fail
