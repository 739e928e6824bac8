# What the plan report says about the schedule's proof: best on a graph whose
# given order is at the lower bound says "schedule proven optimal"; optimal
# that runs out of time on a graph it cannot finish says "not proven optimal"
# and is no worse than the portfolio's best fast order; a fast scheduler
# claims nothing.
. "$(dirname "$0")/harness.bash"
"$CLI" gen transformer --layers 2 --seq 64 -o "$tmp/t.json" || bad "gen transformer"
"$CLI" plan "$tmp/t.json" -s best >"$tmp/best.txt" || bad "plan -s best"
grep -q "; schedule proven optimal" "$tmp/best.txt" || bad "best on the transformer is not reported proven: $(grep makespan "$tmp/best.txt")"
"$CLI" gen randwire -o "$tmp/r.json" || bad "gen randwire"
"$CLI" plan "$tmp/r.json" -s optimal --time-limit 0.01 >"$tmp/opt.txt" || bad "plan -s optimal"
grep -q "; schedule not proven optimal" "$tmp/opt.txt" || bad "optimal out of time does not say not proven: $(grep makespan "$tmp/opt.txt")"
"$CLI" plan "$tmp/r.json" -s list --format json -o "$tmp/list.json" >/dev/null || bad "plan -s list"
"$CLI" plan "$tmp/r.json" -s optimal --time-limit 0.01 --format json -o "$tmp/opt.json" >/dev/null || bad "plan -s optimal json"
lbj() { grep -o '"lower_bound_bytes": *[0-9]*' "$1" | grep -o '[0-9]*$'; }
[ "$(lbj "$tmp/opt.json")" -le "$(lbj "$tmp/list.json")" ] || bad "optimal out of time is worse than list: $(lbj "$tmp/opt.json") > $(lbj "$tmp/list.json")"
"$CLI" plan "$tmp/r.json" -s list >"$tmp/l.txt" || bad "plan -s list"
! grep -q "schedule.*proven optimal" "$tmp/l.txt" || bad "list claims a proof: $(grep makespan "$tmp/l.txt")"
exit $fail
