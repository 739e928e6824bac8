# Recompute and offload under --budget: a plan within the budget (verified by
# `bufplan verify` from its JSON, copies and stats in it), --fallback none
# keeps the plain refusal, a budget below the largest working set gets the
# certificate (exit 1), and bad input gets exit 2 with a clear message.
# `run --plan --verify` replays the copies on 1 and 2 threads and matches safe
# mode; viz and the plan cache refuse plans with copies cleanly.
source "$(dirname "$0")/harness.bash"
"$CLI" gen transformer --training --layers 2 -o "$tmp/g.json" || bad "gen"
"$CLI" plan "$tmp/g.json" -o "$tmp/base.json" -q || bad "plan without a budget"
arena=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['arena_bytes'])" "$tmp/base.json")
budget=$((arena * 4 / 5))
for fb in recompute,offload recompute offload; do
  if "$CLI" plan "$tmp/g.json" --budget "$budget" --fallback "$fb" -o "$tmp/p.json" 2>"$tmp/err"; then
    /usr/bin/python3 - "$tmp/p.json" "$budget" "$fb" <<'PY' || bad "$fb: the plan JSON"
import json, sys
d = json.load(open(sys.argv[1])); b = int(sys.argv[2]); fb = sys.argv[3]
assert d["arena_bytes"] <= b, (d["arena_bytes"], b)
assert d["copies"], "no copies"
st = d["stats"]
for k in ("recompute_cost", "transfer_cost", "offload_bytes", "overhead_percent"): assert k in st, k
kinds = {c["kind"] for c in d["copies"]}
if fb == "recompute": assert kinds == {"recompute"}, kinds
if fb == "offload": assert kinds == {"prefetch"}, kinds
types = {e["type"] for e in d["events"]}
assert ("RECOMPUTE" in types) == ("recompute" in kinds) and ("PREFETCH" in types) == ("prefetch" in kinds), types
PY
    "$CLI" verify "$tmp/g.json" "$tmp/p.json" >/dev/null || bad "$fb: bufplan verify rejects the plan"
    for th in 1 2; do
      expect_msg 0 "matches the safe run" "$CLI" run "$tmp/g.json" --plan "$tmp/p.json" --verify --threads $th
    done
    "$CLI" plan "$tmp/g.json" --budget "$budget" --fallback "$fb" --format csv -o "$tmp/p.csv" -q || bad "$fb: csv"
  else
    grep -q "smallest budget bufplan can fit" "$tmp/err" || bad "$fb: refused without a certificate: $(cat "$tmp/err")"
  fi
done
"$CLI" plan "$tmp/g.json" --budget "$budget" -o "$tmp/p.json" -q || bad "default fallback: no plan"
expect_msg 0 "fallback" "$CLI" plan "$tmp/g.json" --budget "$budget"
expect_msg 0 "overhead" "$CLI" plan "$tmp/g.json" --budget "$budget"
grep -q "RECOMPUTE\|PREFETCH" "$tmp/p.csv" || bad "the events CSV has no RECOMPUTE or PREFETCH"
# tampered: a copy moved onto bytes another storage holds
/usr/bin/python3 - "$tmp/p.json" "$tmp/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = d["copies"][0]
c["offset"] = 0 if c["offset"] else d["alignment"]
json.dump(d, open(sys.argv[2], "w"))
PY
expect_msg 1 "" "$CLI" verify "$tmp/g.json" "$tmp/bad.json"
# none: the plain refusal
expect_msg 1 "no schedule found that fits the budget" "$CLI" plan "$tmp/g.json" --budget "$budget" --fallback none
# below the largest working set: the certificate
expect_msg 1 "which no recompute or offload can shrink; the smallest budget bufplan can fit is" "$CLI" plan "$tmp/g.json" --budget 1K
# bad input
expect_msg 2 "--budget: 0 bytes is no budget" "$CLI" plan "$tmp/g.json" --budget 0
expect_msg 2 "--host-bandwidth: \"-5\" is not a positive number" "$CLI" plan "$tmp/g.json" --budget 1M --host-bandwidth -5
expect_msg 2 "--fallback: \"swap\" is not" "$CLI" plan "$tmp/g.json" --budget 1M --fallback swap
expect_msg 2 "--fallback: \"recompute,\" is not" "$CLI" plan "$tmp/g.json" --budget 1M --fallback recompute,
# consumers that do not handle copies yet refuse them
expect_msg 2 "does not draw yet" "$CLI" viz "$tmp/g.json" --plan "$tmp/p.json" -o "$tmp/v.html"
expect_msg 0 "which cache files do not hold yet" "$CLI" plan "$tmp/g.json" --budget "$budget" --cache "$tmp/cache"
# a kernel workspace is part of the working set the certificate names
cat >"$tmp/ws.json" <<'JSON'
{"format": "bufplan-graph", "version": 1, "name": "ws",
 "tensors": [{"name": "x", "bytes": 4096}, {"name": "y", "bytes": 4096}],
 "ops": [{"name": "conv", "type": "Conv", "inputs": ["x"], "outputs": ["y"], "workspace": 65536}],
 "inputs": ["x"], "outputs": ["y"]}
JSON
expect_msg 1 "its kernel workspaces included" "$CLI" plan "$tmp/ws.json" --budget 8K
exit $fail
