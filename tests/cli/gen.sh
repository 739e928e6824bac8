#!/bin/bash
# bufplan gen: every kind (and --training) writes a graph that parses as
# JSON with the bufplan-graph fields; bad kinds and bad values exit 2.
. "$(dirname "$0")/harness.bash"

# check FILE KIND MIN_OPS: parses, has the format fields, every op input is
# defined, and at least MIN_OPS ops.
check() {
    python3 - "$1" "$2" "$3" <<'PY' || bad "$2: $1 is not a valid graph"
import json, sys
path, kind, min_ops = sys.argv[1], sys.argv[2], int(sys.argv[3])
g = json.load(open(path))
assert g["format"] == "bufplan-graph" and g["version"] == 1, "format"
names = {t["name"] for t in g["tensors"]}
assert len(names) == len(g["tensors"]), "duplicate tensor names"
made = set(g.get("inputs", [])) | set(g.get("weights", []))
for op in g["ops"]:
    for t in op["inputs"]:
        assert t in made, "op %s reads %s before it is made" % (op["name"], t)
    made.update(op["outputs"])
assert len(g["ops"]) >= min_ops, "%d ops" % len(g["ops"])
assert g["outputs"], "no outputs"
PY
}

for kind in chain diamond resnet50 unet transformer randwire; do
    out="$tmp/$kind.json"
    "$CLI" gen "$kind" -o "$out" || bad "gen $kind exited $?"
    check "$out" "$kind" 6
done

# --training on a small transformer and randwire
"$CLI" gen transformer --layers 1 --seq 32 --training -o "$tmp/tt.json" || bad "gen transformer --training exited $?"
check "$tmp/tt.json" transformer-training 40
python3 -c '
import json, sys
g = json.load(open(sys.argv[1]))
assert any(o["type"].endswith(".backward") for o in g["ops"])
assert "wte.grad" in g["outputs"]
' "$tmp/tt.json" || bad "transformer --training has no backward ops or no wte.grad output"
"$CLI" gen randwire --nodes 8 --layers 2 --seed 3 --training -o "$tmp/rw.json" || bad "gen randwire --training exited $?"
check "$tmp/rw.json" randwire-training 40

# same seed -> same bytes; different seed -> different randwire
"$CLI" gen randwire --seed 5 -o "$tmp/a.json" && "$CLI" gen randwire --seed 5 -o "$tmp/b.json" || bad "gen randwire --seed 5 failed"
cmp -s "$tmp/a.json" "$tmp/b.json" || bad "same seed gave different files"
"$CLI" gen randwire --seed 6 -o "$tmp/c.json" || bad "gen randwire --seed 6 failed"
cmp -s "$tmp/a.json" "$tmp/c.json" && bad "seeds 5 and 6 gave the same file"

# standard output by default, symbolic sequence
"$CLI" gen transformer --layers 1 --symbolic-seq > "$tmp/sym.json" || bad "gen to stdout failed"
grep -q '"S"' "$tmp/sym.json" || bad "--symbolic-seq: no \"S\" dimension in the output"

# --help
"$CLI" gen --help | grep -q "usage: bufplan gen" || bad "gen --help"

# bad input: exit 2 with a message
expect2() {
    local what="$1"; shift
    "$CLI" "$@" > "$tmp/out" 2> "$tmp/err"
    local rc=$?
    [ $rc -eq 2 ] || bad "$what: exit $rc, want 2"
    [ -s "$tmp/err" ] || bad "$what: no message on stderr"
}
expect2 "bad kind" gen nosuchgraph -o "$tmp/x.json"
grep -q randwire "$tmp/err" || bad "bad kind: the kinds are not listed"
[ -e "$tmp/x.json" ] && bad "bad kind: an output file was written"
expect2 "no kind" gen
expect2 "bad number" gen chain --nodes abc
expect2 "zero" gen chain --nodes 0
expect2 "negative" gen randwire --layers -2
expect2 "missing value" gen chain --seed
expect2 "unknown option" gen chain --frobnicate
expect2 "two kinds" gen chain diamond
expect2 "bad width" gen transformer --width 100
expect2 "too many levels" gen unet --layers 12
expect2 "unwritable" gen diamond -o "$tmp/no/such/dir/x.json"
exit $fail
