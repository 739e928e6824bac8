#!/usr/bin/env bash
# Allocation-failure injection over the CLI's main paths: plan a JSON graph,
# plan an ONNX model, pack a MiniMalloc CSV, verify a plan, run the executor
# in dynamic mode on one and two workers, and with a learning pool.  For each path the
# allocations are counted (BP_FAULT_ALLOC=0), then the command runs once for
# every n with the n-th allocation failing (library, protobuf-c and jansson
# allocations; src/core/fault.c).  Each run must end cleanly: exit 0, or exit 2
# with a message (never "malformed JSON": out of memory is not bad input); no sanitizer report (ASan, UBSan, LeakSanitizer); and with
# a non-zero exit, no output file and no temp file left behind.
# Needs a build with -DBP_FAULT_INJECTION (the sanitizer test build); skipped
# otherwise.
set -uo pipefail
cli=${BP_CLI:?BP_CLI must name the bufplan binary}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

cat > g.json <<'JSON'
{"format": "bufplan-graph", "version": 1, "name": "f",
 "tensors": [{"name": "x", "shape": [1, 8], "dtype": "f32"}, {"name": "b", "bytes": 32}, {"name": "c", "bytes": 32}],
 "ops": [{"name": "mm", "type": "MatMul", "inputs": ["x"], "outputs": ["b"]},
  {"name": "v", "type": "Reshape", "inputs": ["b"], "outputs": ["c"]}],
 "inputs": ["x"], "outputs": ["c"]}
JSON
printf 'id,lower,upper,size\na,0,2,4\nb,1,3,8\nc,2,4,4\nd,0,5,16\n' > i.csv
# A two-node ONNX model (Relu -> Sigmoid on a 1x8 float input), wire format by hand.
python3 - <<'PY' || exit 1
def v(n):
    out = bytearray()
    while True:
        b = n & 0x7f; n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n: return bytes(out)
def f(num, payload): return v(num << 3 | 2) + v(len(payload)) + payload
def i(num, val): return v(num << 3) + v(val)
def s(num, text): return f(num, text.encode())
def node(op, name, ins, outs): return b"".join(s(1, x) for x in ins) + b"".join(s(2, x) for x in outs) + s(3, name) + s(4, op)
def vi(name):
    dims = f(1, i(1, 1)) + f(1, i(1, 8))
    return s(1, name) + f(2, f(1, i(1, 1) + f(2, dims)))
graph = f(1, node("Relu", "r", ["x"], ["y"])) + f(1, node("Sigmoid", "s", ["y"], ["z"])) + s(2, "tiny") + f(11, vi("x")) + f(12, vi("z"))
model = i(1, 8) + s(2, "faults.sh") + f(8, i(2, 13)) + f(7, graph)
open("m.onnx", "wb").write(model)
PY
"$cli" plan g.json -q -o p.json || { echo "faults.sh: cannot make the plan to verify"; exit 1; }

export ASAN_OPTIONS=detect_leaks=1:exitcode=86
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=87
BP_FAULT_ALLOC=0 BP_FAULT_COUNT=count "$cli" plan g.json -q -o out.json 2>/dev/null
if [ ! -s count ]; then
  echo "faults.sh: SKIPPED: $cli was built without -DBP_FAULT_INJECTION"
  exit 0
fi
rm -f out.json

# one_run PATH_NAME N OUT CMD...: prints a line for a failure.  Inputs are
# read by absolute path; the run happens in its own directory, which holds
# only what the command writes.  Bash builtins only, apart from the command.
one_run() {
  local name=$1 n=$2 out=$3; shift 3
  local d=$work/run.$name.$n
  mkdir "$d" && cd "$d" || { echo "FAIL $name n=$n: cannot make $d"; return; }
  BP_FAULT_ALLOC=$n "$@" >stdout 2>stderr
  local rc=$? bad="" err
  err=$(<stderr)
  local tmps=(*.tmp.*)
  if [[ $err == *Sanitizer* || $err == *"runtime error"* ]]; then bad="sanitizer report"
  elif [[ $rc != 0 && $rc != 1 && $rc != 2 ]]; then bad="exit $rc"
  elif [[ $rc != 0 && -z $err ]]; then bad="exit $rc without a message"
  elif [[ $err == *"malformed JSON"* || $err == *"line -1"* ]]; then bad="an allocation failure reported as bad input"
  elif [[ $rc != 0 && $out != - && -e $out ]]; then bad="output file left after exit $rc"
  elif [[ $rc == 0 && $out != - && ! -s $out ]]; then bad="exit 0 without the output file"
  elif [[ -e ${tmps[0]} ]]; then bad="temp file left"
  fi
  cd "$work"
  if [[ -n $bad ]]; then
    echo "FAIL $name n=$n: $bad"; echo "${err:0:600}" | sed 's/^/    /'
  else
    rm -rf "$d"
  fi
}

total=0 failed=0
sweep() {  # sweep NAME OUT CMD...
  local name=$1 out=$2; shift 2
  rm -f count
  BP_FAULT_ALLOC=0 BP_FAULT_COUNT=count "$@" >/dev/null 2>&1
  local n; n=$(cat count)
  rm -f "$out" 2>/dev/null
  local log="$work/$name.log"
  local k
  for k in 1 2; do      # two workers, no new shell per run
    ( for ((i = k; i <= n; i += 2)); do one_run "$name" "$i" "$out" "$@"; done ) > "$log.$k" &
  done
  wait
  cat "$log.1" "$log.2" > "$log"
  local nf; nf=$(grep -c '^FAIL' "$log")
  printf '%-12s %5d allocation-failure points, %d failed\n' "$name" "$n" "$nf"
  grep -A5 '^FAIL' "$log" | head -20
  total=$((total + n)); failed=$((failed + nf))
}
sweep plan-json out.json "$cli" plan "$work/g.json" -q -o out.json
sweep plan-onnx out.json "$cli" plan "$work/m.onnx" -q -o out.json
sweep pack-csv out.csv "$cli" pack "$work/i.csv" -o out.csv
sweep verify - "$cli" verify "$work/g.json" "$work/p.json"
# the executor in dynamic mode: its pool, the workers' pool handles and the
# run-time storages (one worker, then two)
sweep run-dyn - "$cli" run "$work/g.json" --dynamic --kernel empty
sweep run-dyn2 - "$cli" run "$work/g.json" --dynamic --kernel empty --threads 2
# a learning pool (its log, the plan, bestfit's memory): four runs, planned
sweep run-learn - "$cli" run "$work/g.json" --dynamic --learn --repeat 4 --kernel empty
echo "total: $total allocation-failure points, $failed failed"
[ "$failed" = 0 ]
