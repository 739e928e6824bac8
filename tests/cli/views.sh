# Views within their roots: a view that claims more bytes than its root is
# refused when the graph is loaded, naming both tensors; a broadcast view
# (aten.expand) may claim more (its elements repeat) and is planned,
# verified and run with only its root's bytes; a plan whose view grows past
# its root (a forged plan for a graph whose symbol is bound later) is
# rejected by the verifier.
. "$(dirname "$0")/harness.bash"
g() {  # g FILE VIEW_BYTES TYPE: a (64 B) made by op0, v a view of it
  printf '{"format": "bufplan-graph", "version": 1, "tensors": [{"name": "x", "bytes": 64}, {"name": "a", "bytes": 64}, {"name": "v", "bytes": %s%s}, {"name": "y", "bytes": 64}], "ops": [{"name": "op0", "type": "Relu", "inputs": ["x"], "outputs": ["a"]}, {"name": "op1", "type": "%s", "inputs": ["a"], "outputs": ["v"]}, {"name": "op2", "type": "Relu", "inputs": ["v"], "outputs": ["y"]}], "inputs": ["x"], "outputs": ["y"]}\n' \
    "$2" "$([ "$3" = Relu ] && echo ', "view_of": "a"')" "$3" > "$1"
}
# 1 TiB declared over 64 bytes: explicit view_of, and a view op type
g "$tmp/big.json" 1099511627776 Relu
expect_msg 2 'tensor "v" (1099511627776 bytes) is a view of "a" (64 bytes) and larger than it' "$CLI" plan "$tmp/big.json" -q
expect_msg 2 'is a view of "a"' "$CLI" verify "$tmp/big.json" "$tmp/none.json"
expect_msg 2 'is a view of "a"' "$CLI" run "$tmp/big.json" --dynamic --kernel digest
g "$tmp/big_op.json" 128 aten.view
expect_msg 2 'tensor "v" (128 bytes) is a view of "a" (64 bytes)' "$CLI" plan "$tmp/big_op.json" -q
# same size or smaller: accepted
g "$tmp/ok.json" 64 aten.view
"$CLI" plan "$tmp/ok.json" -q -o "$tmp/ok.plan.json" || bad "a view of its root's size should plan"
# a broadcast view of 1 TiB over 64 bytes: planned, verified, run on the root's bytes only
g "$tmp/expand.json" 1099511627776 aten.expand
"$CLI" plan "$tmp/expand.json" -q -o "$tmp/expand.plan.json" || bad "aten.expand larger than its root should plan"
"$CLI" verify "$tmp/expand.json" "$tmp/expand.plan.json" >/dev/null || bad "the broadcast view's plan should verify"
for m in "" --dynamic --safe; do
  timeout 60 "$CLI" run "$tmp/expand.json" $m --kernel digest --max-memory 64M >"$tmp/run.out" 2>&1 || bad "run $m of a broadcast view: $(cat "$tmp/run.out")"
done
# the verifier: a plan for a symbolic view whose symbol, bound after finalize, makes it outgrow its root
printf '{"format": "bufplan-graph", "version": 1, "tensors": [{"name": "x", "dtype": "f32", "shape": [16]}, {"name": "a", "dtype": "f32", "shape": [16]}, {"name": "v", "dtype": "f32", "shape": ["N"]}, {"name": "y", "dtype": "f32", "shape": [16]}], "ops": [{"name": "op0", "type": "Relu", "inputs": ["x"], "outputs": ["a"]}, {"name": "op1", "type": "Reshape", "inputs": ["a"], "outputs": ["v"]}, {"name": "op2", "type": "Relu", "inputs": ["v"], "outputs": ["y"]}], "inputs": ["x"], "outputs": ["y"]}\n' > "$tmp/sym.json"
"$CLI" plan "$tmp/sym.json" --dim N=16 -q -o "$tmp/sym.plan.json" || bad "the symbolic view at its root's size should plan"
expect_msg 2 'tensor "v" (256 bytes) is a view of "a" (64 bytes)' "$CLI" plan "$tmp/sym.json" --dim N=64 -q
# a graph output that is a view of an output written in place over a graph
# input planned in the arena: read from the arena, not from the given input
printf '{"format": "bufplan-graph", "version": 1, "tensors": [{"name": "x", "shape": [16], "dtype": "f32"}, {"name": "w", "shape": [16], "dtype": "f32"}, {"name": "y", "shape": [16], "dtype": "f32"}, {"name": "v", "shape": [16], "dtype": "f32", "view_of": "y"}], "ops": [{"name": "mul", "type": "Mul", "inputs": ["x", "w"], "outputs": ["y"]}, {"name": "r", "type": "Reshape", "inputs": ["y"], "outputs": ["v"]}], "inputs": ["x", "w"], "outputs": ["v"]}\n' > "$tmp/inview.json"
expect_msg 0 "verify: ok" "$CLI" run "$tmp/inview.json" --plan-inputs --verify
exit $fail
