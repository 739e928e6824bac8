#!/bin/bash
# bufplan run: every mode runs and reports; --verify passes on sound plans on
# 1 and 2 threads and fails (exit 1) on a plan with one lifetime cut short,
# naming that tensor and the tensor placed over it; --history writes a log
# that checks clean; --dynamic --learn serves later runs from a learned
# plan and its statistics agree with themselves; safe mode reports its
# buffers as its peak; bad options exit 2.
. "$(dirname "$0")/harness.bash"

"$CLI" gen randwire --layers 2 --nodes 16 --width 4 -o "$tmp/g.json" || { echo "gen failed"; exit 1; }

expect() {  # expect CODE PATTERN ARGS...: exit code and a line matching PATTERN
    local code=$1 pat=$2; shift 2
    "$CLI" run "$@" >"$tmp/out" 2>&1
    local rc=$?
    [ "$rc" = "$code" ] || { bad "run $* exited $rc, expected $code"; cat "$tmp/out" >&2; return; }
    grep -qE -- "$pat" "$tmp/out" || { bad "run $*: no line matching '$pat'"; cat "$tmp/out" >&2; }
}

expect 0 '^run 1: .* ns/op' "$tmp/g.json"
expect 0 '= the plan.s arena' "$tmp/g.json"
expect 0 'verify: ok: planned run on 2 threads' "$tmp/g.json" --threads 2 --verify
expect 0 '[0-9]+ fences' "$tmp/g.json" --threads 2
expect 0 'dynamic mode' "$tmp/g.json" --dynamic
expect 0 '[1-9][0-9]* allocs' "$tmp/g.json" --dynamic --malloc
# learned sequences: the runs are planned after two and served from the plan
expect 0 'learned +[1-9][0-9]* bytes in 1 plans, [1-9][0-9]* allocations served' "$tmp/g.json" --dynamic --learn --repeat 5 --stats
expect 0 'dynamic mode, 2 threads' "$tmp/g.json" --dynamic --learn --repeat 5 --threads 2
expect 0 'safe buffers' "$tmp/g.json" --safe --threads 2
# a learning run of resnet50: the in-use peak within the reserved peak, the
# OS calls that gave pages back while learning named; safe mode's peak is its
# buffers, not 0
"$CLI" gen resnet50 -o "$tmp/r.json" || bad "gen resnet50"
"$CLI" run "$tmp/r.json" --dynamic --learn --repeat 3 --stats --kernel empty >"$tmp/learn.out" 2>&1 || bad "run --learn: $(cat "$tmp/learn.out")"
rp=$(sed -n 's/^ *reserved .*(peak \([0-9]*\)).*/\1/p' "$tmp/learn.out")
up=$(sed -n 's/^ *in use .*(peak \([0-9]*\)).*/\1/p' "$tmp/learn.out")
[ -n "$rp" ] && [ -n "$up" ] && [ "$up" -le "$rp" ] || bad "run --learn: in-use peak '$up' above reserved peak '$rp': $(cat "$tmp/learn.out")"
grep -qE 'OS calls \([1-9][0-9]* of them pages of freed blocks given back while learning\)' "$tmp/learn.out" ||
  bad "run --learn: the OS calls do not say how many gave pages back: $(grep reserved "$tmp/learn.out")"
expect 0 'activations peak [1-9][0-9.]* [KM]iB \(every tensor its own buffer\)' "$tmp/g.json" --safe
expect 0 '^runs: best' "$tmp/g.json" --repeat 3
expect 0 'reserved' "$tmp/g.json" --stats
expect 0 'empty kernels' "$tmp/g.json" --kernel empty --kernel-us 5 --threads 2
expect 0 'fence-aware' "$tmp/g.json" --fence-aware --threads 2 --verify
expect 0 'no tenants. accesses interleave' "$tmp/g.json" --threads 2 --history "$tmp/h.log"
grep -q '^tenant ' "$tmp/h.log" && grep -q '^last-read ' "$tmp/h.log" || bad "history file lacks tenants"
[ "$("$CLI" run "$tmp/g.json" --repeat 3 | grep -c '^run [0-9]')" = 3 ] || bad "--repeat 3 did not print 3 runs"

# a saved plan runs the same
"$CLI" plan "$tmp/g.json" -s kahn --format json -o "$tmp/p.json" >/dev/null || bad "plan failed"
expect 0 'verify: ok' "$tmp/g.json" --plan "$tmp/p.json" --verify

# a broken plan: the victim's lifetime cut short and another tensor, created
# while the victim is still read, put over the same (fresh) bytes
python3 - "$tmp/p.json" "$tmp/broken.json" "$tmp/names" <<'PY' || bad "could not break the plan"
import json, sys
p = json.load(open(sys.argv[1]))
ts = [t for t in p["tensors"] if t.get("kind") == "planned" and t.get("alias_of") is None and t.get("bytes", 0) > 0]
aliased = {t.get("alias_of") for t in p["tensors"] if t.get("alias_of")}
ts = [t for t in ts if t["name"] not in aliased]
for v in ts:
    if v["last"] - v["first"] < 3: continue
    us = [u for u in ts if u is not v and v["first"] < u["first"] < v["last"]]
    if not us: continue
    u = us[0]
    al = p["alignment"]
    base = p["arena_bytes"]
    v["offset"] = base; u["offset"] = base
    p["arena_bytes"] = base + (max(v["bytes"], u["bytes"]) + al - 1) // al * al
    v["last"] = v["first"]
    json.dump(p, open(sys.argv[2], "w"))
    open(sys.argv[3], "w").write(v["name"] + "\n" + u["name"] + "\n")
    sys.exit(0)
sys.exit(1)
PY
[ -f "$tmp/names" ] || bad "no lifetime to cut in the plan"
if [ -f "$tmp/names" ]; then
    victim=$(sed -n 1p "$tmp/names"); culprit=$(sed -n 2p "$tmp/names")
    "$CLI" verify "$tmp/g.json" "$tmp/broken.json" >"$tmp/vout" 2>&1
    [ $? = 1 ] && grep -q "\"$victim\"" "$tmp/vout" || { bad "bufplan verify did not name $victim"; cat "$tmp/vout" >&2; }
    for th in 1 2; do
        expect 1 "first tensor whose contents differ: \"$victim\".*\"$culprit\"" "$tmp/g.json" --plan "$tmp/broken.json" --verify --threads $th
    done
    expect 1 'conflicts' "$tmp/g.json" --plan "$tmp/broken.json" --history "$tmp/hb.log"
fi

# bad usage
expect 2 'no graph' 
expect 2 'threads' "$tmp/g.json" --threads 0
expect 2 'exclude' "$tmp/g.json" --safe --dynamic
expect 2 'needs --dynamic' "$tmp/g.json" --malloc
expect 2 '--learn needs --dynamic' "$tmp/g.json" --learn
expect 2 '--learn needs --dynamic' "$tmp/g.json" --dynamic --malloc --learn
expect 2 'unknown option' "$tmp/g.json" --frobnicate
expect 2 'kernel must be' "$tmp/g.json" --kernel fast
expect 2 'repeat' "$tmp/g.json" --repeat 0
expect 2 '' "$tmp/missing.json"
"$CLI" run --help | grep -q -- '--verify' || bad "--help lacks --verify"
n=$("$CLI" run --help | grep -c -- '^  --threads N')
[ "$n" = 1 ] || bad "run --help lists --threads $n times"
exit $fail
