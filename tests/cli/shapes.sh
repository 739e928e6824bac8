# Warm-up buckets and replays from the command line: `run GRAPH --shapes FILE`
# replays shapes through the warm-up planner (buckets, memory and disk hits,
# freeze, the conservative branch), with the memory used per shape; `run
# --config` is read; `plan` and `run` with a config's buckets round --dim
# values up and say so, or say why the buckets are not used; bad shapes files
# are errors naming the line.
. "$(dirname "$0")/harness.bash"

"$CLI" gen transformer --layers 1 --seq 16 --symbolic-seq -o "$tmp/t.json" || bad "gen transformer"
cat >"$tmp/shapes.txt" <<'S'
# sequence lengths, one binding per line
S=100
S=128
S=100,
S=200
freeze
S=64
S=300
S
echo "{\"buckets\": {\"S\": [128, 256]}, \"cache_dir\": \"$tmp/cache\"}" >"$tmp/cfg.json"

# --- the replay: what happened to each shape, and the memory used
"$CLI" run "$tmp/t.json" --shapes "$tmp/shapes.txt" --config "$tmp/cfg.json" >"$tmp/r1.txt" 2>&1 || bad "run --shapes: $(cat "$tmp/r1.txt")"
want1='shape 1: S=100 (bucket S=128): replanned
shape 2: S=128: memory-hit
shape 3: S=100 (bucket S=128): memory-hit
shape 4: S=200 (bucket S=256): replanned
freeze: from here no new shape is planned (dynamic_policy conservative)
shape 5: S=64 (bucket S=128): memory-hit
shape 6: S=300: conservative'
got=$(grep -E '^(shape|freeze)' "$tmp/r1.txt" | sed -E 's/, arena.*//')
[ "$got" = "$want1" ] || bad "run --shapes: the per-shape lines differ:
$got
--- expected:
$want1"
grep -qF "replay transformer: 6 shapes; symbols S; buckets S=128,256; cache $tmp/cache; policy conservative" "$tmp/r1.txt" ||
  bad "run --shapes: no header line: $(cat "$tmp/r1.txt")"
grep -qE "^planner: 6 runs: 2 replanned, 3 memory hits, 0 disk hits, 1 conservative, 0 covered; 2 plans kept; planning [0-9.]+ ms; frozen$" "$tmp/r1.txt" ||
  bad "run --shapes: no summary: $(cat "$tmp/r1.txt")"
# memory used: the bucket S=256 plan is larger than the S=128 one, and each static plan uses exactly its arena
used() { sed -n "s/^shape $1: .*memory used \(.*\)$/\1/p" "$tmp/r1.txt"; }
arena() { sed -n "s/^shape $1: .*arena \([0-9.]* [KMG]*i*B\).*/\1/p" "$tmp/r1.txt"; }
[ "$(used 1)" = "$(arena 1)" ] && [ "$(used 4)" = "$(arena 4)" ] || bad "a static plan's memory used is not its arena: $(cat "$tmp/r1.txt")"
[ "$(used 1)" != "$(used 4)" ] || bad "S=128 and S=256 use the same memory: $(cat "$tmp/r1.txt")"
grep -qE "^shape 6: S=300: conservative, arena .* \+ dynamic tensors from the pool \(peak [1-9]" "$tmp/r1.txt" ||
  bad "the conservative run does not show its dynamic peak: $(cat "$tmp/r1.txt")"
# a second replay finds the plans on disk
"$CLI" run "$tmp/t.json" --shapes "$tmp/shapes.txt" --config "$tmp/cfg.json" >"$tmp/r2.txt" 2>&1 || bad "run --shapes (again)"
grep -qF "shape 1: S=100 (bucket S=128): disk-hit" "$tmp/r2.txt" && grep -qF "0 replanned, 3 memory hits, 2 disk hits" "$tmp/r2.txt" ||
  bad "the second replay does not hit the disk cache: $(cat "$tmp/r2.txt")"
# without buckets every length is its own plan; policy cover after the freeze
printf 'S=32\nS=64\nfreeze\nS=48\n' >"$tmp/cover.txt"
"$CLI" run "$tmp/t.json" --shapes "$tmp/cover.txt" --dynamic-policy cover --kernel empty >"$tmp/r3.txt" 2>&1 || bad "run --shapes cover: $(cat "$tmp/r3.txt")"
grep -qF "shape 3: S=48: covered" "$tmp/r3.txt" || bad "policy cover: S=48 is not covered by S=64: $(cat "$tmp/r3.txt")"

# --- bad shapes files and options: exit 2 naming the line
printf 'S=100\nS=1x\n' >"$tmp/bad1.txt"
expect_msg 2 'bad1.txt:2: "S=1x": a dimension must be a whole number of at least 1' "$CLI" run "$tmp/t.json" --shapes "$tmp/bad1.txt"
printf 'S=100\nT=4\n' >"$tmp/bad2.txt"
expect_msg 2 'bad2.txt:2: transformer: "T" is not a free symbol of the graph' "$CLI" run "$tmp/t.json" --shapes "$tmp/bad2.txt"
printf 'freeze S=4\n' >"$tmp/bad3.txt"
expect_msg 2 'bad3.txt:1: "freeze" stands alone on its line' "$CLI" run "$tmp/t.json" --shapes "$tmp/bad3.txt"
printf '# nothing\n\n' >"$tmp/empty.txt"
expect_msg 2 "empty.txt: no shapes (one binding per line: SYM=N SYM=N ...)" "$CLI" run "$tmp/t.json" --shapes "$tmp/empty.txt"
expect_msg 2 "no-such.txt: cannot open" "$CLI" run "$tmp/t.json" --shapes "$tmp/no-such.txt"
expect_msg 2 "--shapes replays shapes through the warm-up planner" "$CLI" run "$tmp/t.json" --shapes "$tmp/shapes.txt" --verify

# --- run --config is read; plan and run with buckets round --dim up, or say why not
expect_msg 0 "plan: best / bestfit" "$CLI" run "$tmp/t.json" --config "$tmp/cfg.json" --dim S=16
expect_msg 0 "plan cache: hit ($tmp/cache)" "$CLI" run "$tmp/t.json" --config "$tmp/cfg.json" --dim S=16
expect_msg 0 "note: --dim S=100 is planned as S=128 (its bucket)" "$CLI" plan "$tmp/t.json" --config "$tmp/cfg.json" --dim S=100
"$CLI" plan "$tmp/t.json" --dim S=128 -q -o "$tmp/p128.json" || bad "plan S=128"
"$CLI" plan "$tmp/t.json" --config "$tmp/cfg.json" --dim S=100 -q -o "$tmp/p100.json" 2>/dev/null || bad "plan S=100 with buckets"
cmp -s <(sed 's/"plan_seconds": [^,]*,//' "$tmp/p128.json") <(sed 's/"plan_seconds": [^,]*,//' "$tmp/p100.json") || bad "plan --dim S=100 with the bucket 128 is not the plan of S=128"
expect_msg 0 "note: the buckets of S are not used: no --dim binds S" "$CLI" plan "$tmp/t.json" --config "$tmp/cfg.json" --allow-dynamic
expect_msg 0 "note: --dim S=100 is planned as S=128 (its bucket)" "$CLI" run "$tmp/t.json" --buckets S=128 --dim S=100 --kernel empty

# --- an ONNX model with a symbolic batch: each binding re-imported and planned
onnx_python
"$PY" - "$tmp" <<'PY'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper
nodes = [h.make_node("MatMul", ["x", "W"], ["h"], name="mm"), h.make_node("Relu", ["h"], ["r"], name="relu"),
         h.make_node("MatMul", ["r", "W"], ["y"], name="mm2")]
g = h.make_graph(nodes, "enc", [h.make_tensor_value_info("x", T.FLOAT, ["N", 64])], [h.make_tensor_value_info("y", T.FLOAT, ["N", 64])],
                 [numpy_helper.from_array(np.ones((64, 64), np.float32), "W")])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), sys.argv[1] + "/enc.onnx")
PY
if "$CLI" plan "$tmp/enc.onnx" --dim N=1 -q 2>&1 | grep -q "without ONNX support"; then echo "SKIP (ONNX part): no ONNX support"; exit $fail; fi
printf 'N=1\nN=64\nN=1\n' >"$tmp/batch.txt"
"$CLI" run "$tmp/enc.onnx" --shapes "$tmp/batch.txt" >"$tmp/r4.txt" 2>&1 || bad "run enc.onnx --shapes: $(cat "$tmp/r4.txt")"
# N=1: h (256 B) and y (256 B) at alignment 256, r in place over h: 512 B; N=64: 16 KiB each, 32 KiB
grep -qF "shape 1: N=1: replanned, arena 512 B; memory used 512 B" "$tmp/r4.txt" &&
  grep -qF "shape 2: N=64: replanned, arena 32.0 KiB; memory used 32.0 KiB" "$tmp/r4.txt" &&
  grep -qF "shape 3: N=1: memory-hit" "$tmp/r4.txt" || bad "enc.onnx replay: $(cat "$tmp/r4.txt")"
exit $fail
