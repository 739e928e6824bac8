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
exit $fail
