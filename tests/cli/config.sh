#!/bin/bash
# bufplan config --show: defaults, presets, a config file, flags over the
# file, every key round-trips through --show; unknown keys and wrong types
# exit 2 naming the key; `bufplan plan --config/--preset` uses the settings.
. "$(dirname "$0")/harness.bash"

# get JSON KEY: a key of the JSON on stdin
get() { python3 -c 'import json,sys; v=json.load(sys.stdin)[sys.argv[1]]; print(json.dumps(v))' "$1"; }

"$CLI" config --show >"$tmp/def.json" || bad "config --show failed"
# the default scheduler and assigner are the ones `bufplan plan` uses without flags
"$CLI" gen diamond -o "$tmp/d0.json" || bad "gen"
"$CLI" plan "$tmp/d0.json" >"$tmp/p0.txt" || bad "plan"
want=$(sed -n 's/^schedule \([a-z]*\), assign \([a-z]*\),.*/"\1" "\2"/p' "$tmp/p0.txt")
[ "$(get scheduler <"$tmp/def.json") $(get assigner <"$tmp/def.json")" = "$want" ] || bad "default scheduler/assigner: want $want"
[ "$(get alpha <"$tmp/def.json")" = 0.7 ] || bad "default alpha"
[ "$(get replan <"$tmp/def.json")" = true ] || bad "default replan"

# presets: inference alpha > beta, training beta > alpha
"$CLI" config --preset inference >"$tmp/inf.json" || bad "--preset inference"
"$CLI" config --preset training >"$tmp/tr.json" || bad "--preset training"
python3 - "$tmp/inf.json" "$tmp/tr.json" <<'PY' || bad "preset values"
import json, sys
i, t = (json.load(open(p)) for p in sys.argv[1:3])
assert i["preset"] == "inference" and i["alpha"] > i["beta"] and i["scheduler"] == "best", i
assert t["preset"] == "training" and t["beta"] > t["alpha"] and t["beta"] > i["beta"] and t["scheduler"] == "best" and not t["fence_aware"], t
PY
"$CLI" config --preset gaming >/dev/null 2>"$tmp/err"; [ $? -eq 2 ] || bad "unknown preset should exit 2"
grep -q gaming "$tmp/err" || bad "unknown preset message"

# a file with every key; --show prints them back; re-reading --show's output is a fixed point
cat >"$tmp/all.json" <<'J'
{"format": "bufplan-config", "version": 1, "preset": "training", "scheduler": "dfs", "alpha": 0.2,
 "beta": 0.8, "time_limit": 3.5, "budget": "64M", "assigner": "color", "alignment": 128, "seed": 5,
 "alias": false, "plan_inputs": true, "plan_constants": true, "fence_aware": false, "replan": false,
 "warmup_runs": 7, "dynamic_policy": "cover", "buckets": {"S": [128, 256, 512]},
 "compaction_interval": 1000, "threads": 2, "cache_dir": "/tmp/c", "cache_verify": true}
J
"$CLI" config --show --config "$tmp/all.json" >"$tmp/all.out" || bad "config --config"
python3 - "$tmp/all.json" "$tmp/all.out" <<'PY' || bad "--show does not echo the file"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
a["budget"] = 64 << 20
for k, v in a.items():
    assert b[k] == v, (k, v, b[k])
PY
"$CLI" config --config "$tmp/all.out" >"$tmp/all2.out" || bad "re-reading --show output"
cmp -s "$tmp/all.out" "$tmp/all2.out" || bad "--show output is not a fixed point"

# every key listed by --keys appears in --show
for k in $("$CLI" config --keys); do
    get "$k" <"$tmp/def.json" >/dev/null 2>&1 || bad "key $k missing from --show"
done

# flags override the file, wherever they are
out=$("$CLI" config --alpha 0.9 --config "$tmp/all.json" --warmup-runs 2 --buckets S=1,2 --no-cache-verify --set threads=6)
[ "$(echo "$out" | get alpha)" = 0.9 ] || bad "--alpha over the file"
[ "$(echo "$out" | get warmup_runs)" = 2 ] || bad "--warmup-runs over the file"
[ "$(echo "$out" | get threads)" = 6 ] || bad "--set threads over the file"
[ "$(echo "$out" | get buckets)" = '{"S": [1, 2]}' ] || bad "--buckets over the file"
# a --preset flag wins over the file's preset; the file's keys win over both
out=$("$CLI" config --preset inference --config "$tmp/all.json")
[ "$(echo "$out" | get preset)" = '"inference"' ] || bad "--preset over the file's preset"
[ "$(echo "$out" | get alpha)" = 0.2 ] || bad "file key over --preset"

# unknown keys and wrong types: exit 2, the key named
check_bad() { # JSON NEEDLE
    echo "$1" >"$tmp/bad.json"
    "$CLI" config --config "$tmp/bad.json" >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] || bad "$1: exit $rc, want 2"
    grep -qF "$2" "$tmp/err" || bad "$1: message lacks $2: $(cat "$tmp/err")"
}
check_bad '{"sheduler": "dfs"}' '"sheduler"'
check_bad '{"alpha": "high"}' '"alpha"'
check_bad '{"threads": 1.5}' '"threads"'
check_bad '{"replan": "yes"}' '"replan"'
check_bad '{"buckets": [1, 2]}' '"buckets"'
check_bad '{"alignment": 100}' '"alignment"'
check_bad '{"alpha": 0.5' 'bad.json'
"$CLI" config --set colour=red >/dev/null 2>"$tmp/err"; [ $? -eq 2 ] || bad "--set unknown key should exit 2"
grep -q '"colour"' "$tmp/err" || bad "--set unknown key message"
"$CLI" config --warmup-runs many >/dev/null 2>"$tmp/err"; [ $? -eq 2 ] || bad "--warmup-runs many should exit 2"
"$CLI" config --config "$tmp/missing.json" >/dev/null 2>&1; [ $? -eq 2 ] || bad "missing config file should exit 2"

# plan uses the config: the scheduler and assigner from the file, a flag over it
"$CLI" gen diamond -o "$tmp/d.json" || bad "gen"
echo '{"scheduler": "dfs", "assigner": "color"}' >"$tmp/c.json"
"$CLI" plan "$tmp/d.json" --config "$tmp/c.json" >"$tmp/p.txt" || bad "plan --config"
grep -q "schedule dfs, assign color" "$tmp/p.txt" || bad "plan --config not applied: $(cat "$tmp/p.txt")"
"$CLI" plan "$tmp/d.json" --config "$tmp/c.json" -a bestfit >"$tmp/p.txt" || bad "plan --config -a"
grep -q "schedule dfs, assign bestfit" "$tmp/p.txt" || bad "plan flag over --config"
"$CLI" plan "$tmp/d.json" --preset inference >"$tmp/p.txt" || bad "plan --preset"
grep -q "schedule best" "$tmp/p.txt" || bad "plan --preset not applied"
# numbers are printed in their shortest round-trip form
"$CLI" config --show >"$tmp/show.json" || bad "config --show"
grep -q '"alpha": 0.7,' "$tmp/show.json" || bad "config --show: alpha is not printed as 0.7: $(grep alpha "$tmp/show.json")"
grep -q '"time_limit": 10,' "$tmp/show.json" || bad "config --show: time_limit is not printed as 10"
# a preset never gives a higher peak than the defaults, on every generated graph
arena() { "$CLI" plan "$@" -q -o - | sed -n 's/^ "arena_bytes": \([0-9]*\),$/\1/p'; }
for k in chain diamond resnet50 unet "transformer --layers 2 --seq 128" randwire "resnet50 --training --layers 1"; do
  "$CLI" gen $k -o "$tmp/k.json" || bad "gen $k"
  base=$(arena "$tmp/k.json")
  for preset in $("$CLI" config --presets | awk '{print $1}'); do
    got=$(arena "$tmp/k.json" --preset "$preset")
    [ -n "$got" ] && [ -n "$base" ] && [ "$got" -le "$base" ] || bad "preset $preset on $k: arena ${got:-?} above the defaults' ${base:-?}"
  done
done
# resource limits as config keys: "limits" (the --limit keys), "max_memory",
# "max_seconds"; shown by --show, used by plan, and a flag wins over the file
"$CLI" gen chain --nodes 2000 -o "$tmp/lc.json" || bad "gen lc"
printf '{"limits": {"max_ops": 100, "max_run_bytes": "1G"}, "max_memory": "64M", "max_seconds": 600}\n' > "$tmp/lim.json"
"$CLI" config --show --config "$tmp/lim.json" >"$tmp/lim.out" || bad "config --show of limits"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); assert c["limits"]["max_ops"] == 100 and c["limits"]["max_run_bytes"] == 1 << 30 and c["limits"]["max_rank"] == 64 and c["max_memory"] == 64 << 20 and c["max_seconds"] == 600, c' "$tmp/lim.out" || bad "--show: limits not as the file says"
expect_msg 2 "over the limits" "$CLI" plan "$tmp/lc.json" --config "$tmp/lim.json" -q
"$CLI" plan "$tmp/lc.json" --config "$tmp/lim.json" --limit max_ops=100000 -q || bad "--limit should win over the file's limits"
expect_msg 2 "over the limits" "$CLI" plan "$tmp/lc.json" --set limits=max_ops=10 -q
printf '{"max_memory": "100K"}\n' > "$tmp/mem.json"
expect_msg 2 "out of memory" "$CLI" plan "$tmp/lc.json" --config "$tmp/mem.json" -q
"$CLI" plan "$tmp/lc.json" --config "$tmp/mem.json" --max-memory 1G -q || bad "--max-memory should win over the file's max_memory"
printf '{"max_seconds": 0.2}\n' > "$tmp/sec.json"
"$CLI" gen chain --nodes 20000 -o "$tmp/lc20k.json" || bad "gen lc20k"
expect_msg 2 "time limit (--max-seconds) was reached" "$CLI" plan "$tmp/lc20k.json" -s optimal --time-limit 100 --config "$tmp/sec.json" -q
printf '{"limits": {"max_opps": 1}}\n' > "$tmp/badlim.json"
expect_msg 2 'unknown limit "max_opps"' "$CLI" plan "$tmp/lc.json" --config "$tmp/badlim.json" -q
exit $fail
