# Resource limits from the command line: --limit KEY=N, a heap cap
# (--max-memory) that turns every allocation past it into a clean "out of
# memory", and a deadline for the whole command (--max-seconds).  Each ends
# with exit 2 and a message, never a crash or a wrong figure.
. "$(dirname "$0")/harness.bash"
"$CLI" gen chain --nodes 20000 -o "$tmp/big.json" || bad "gen"
expect_msg 2 "out of memory" "$CLI" plan "$tmp/big.json" --max-memory 1M -q
expect_msg 2 "over the limits" "$CLI" plan "$tmp/big.json" --limit max_ops=1000 -q
expect_msg 2 "max_json_depth" "$CLI" plan "$tmp/big.json" --limit max_json_depth=1 -q
expect_msg 2 "time limit (--max-seconds) was reached" "$CLI" plan "$tmp/big.json" -s optimal --time-limit 100 --max-seconds 0.2 -q
expect_msg 2 "unknown limit" "$CLI" plan "$tmp/big.json" --limit foo=1 -q
expect_msg 2 "not a byte count" "$CLI" plan "$tmp/big.json" --max-memory lots -q
expect_msg 2 "not a number of seconds" "$CLI" plan "$tmp/big.json" --max-seconds -1 -q
"$CLI" plan "$tmp/big.json" --max-memory 1G --limit max_ops=100000 --max-seconds 600 -q || bad "generous limits should plan"
# run: what it may reserve is capped (--limit max_run_bytes, default the
# machine's memory, at most --max-memory), so a graph of a few hundred bytes
# declaring huge tensors ends with a message instead of taking all memory
printf '{"format": "bufplan-graph", "version": 1, "tensors": [{"name": "x", "bytes": %s}, {"name": "y", "bytes": %s}], "ops": [{"name": "op0", "type": "Relu", "inputs": ["x"], "outputs": ["y"]}], "inputs": ["x"], "outputs": ["y"]}\n' 1125899906842624 1125899906842624 > "$tmp/huge.json"
for m in --dynamic "--dynamic --malloc" --safe ""; do
  expect_msg 2 "max_run_bytes" "$CLI" run "$tmp/huge.json" $m --kernel digest
done
"$CLI" gen chain --nodes 50 -o "$tmp/small.json" || bad "gen small"
"$CLI" run "$tmp/small.json" --dynamic --limit max_run_bytes=1G >/dev/null || bad "run under a generous max_run_bytes"
for m in --dynamic "--dynamic --malloc" ""; do
  expect_msg 2 "max_run_bytes" "$CLI" run "$tmp/small.json" $m --limit max_run_bytes=1K
done
# out of memory inside the JSON parser is "out of memory", not malformed
# JSON (under an address-space cap; sanitizer builds reserve too much
# address space for one, faults.sh covers them)
if command -v prlimit >/dev/null && ! ldd "$CLI" 2>/dev/null | grep -q 'lib[at]san'; then
  "$CLI" gen chain --nodes 300000 -o "$tmp/c300k.json" || bad "gen c300k"
  for as in 150000000 250000000; do
    expect_msg 2 "out of memory" prlimit --as=$as "$CLI" plan "$tmp/c300k.json" -q
    grep -q "malformed" "$tmp/expect.out" && bad "prlimit --as=$as: out of memory reported as malformed JSON"
  done
fi
exit $fail
