#!/usr/bin/env bash
# valgrind memcheck over a set of CLI invocations (plan JSON / ONNX, verify,
# pack, gen, report).  Any memcheck error or a definite/indirect leak fails
# the test (--error-exitcode).  Skipped when valgrind is missing or the CLI
# was built with a sanitizer (the two do not mix): CI runs it on the Release
# build (see docs/RELIABILITY.md).
set -uo pipefail
cli=${BP_CLI:?BP_CLI must name the bufplan binary}
data=${BP_DATA:-}
if ! command -v valgrind >/dev/null; then echo "valgrind.sh: SKIPPED: valgrind is not installed"; exit 0; fi
if nm -an "$cli" 2>/dev/null | grep -E "__asan_init|__tsan_init" >/dev/null; then
  echo "valgrind.sh: SKIPPED: $cli is built with a sanitizer"; exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
vg() {
  valgrind -q --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
    --show-leak-kinds=definite,indirect "$cli" "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [ $rc = 99 ] || grep -q "==[0-9]*==" "$work/err"; then
    echo "FAIL (memcheck): bufplan $*"; grep "==[0-9]*==" "$work/err" | head -20; failed=$((failed + 1))
  else
    echo "ok   (exit $rc): bufplan $*"
  fi
  runs=$((runs + 1))
}
runs=0 failed=0
"$cli" gen diamond --seed 3 -o "$work/g.json" || exit 1
vg gen transformer --seed 1 -o "$work/t.json"
vg plan "$work/g.json" -o "$work/p.json"
vg plan "$work/g.json" -s best -a search --time-limit 0.5 --format csv -o "$work/e.csv"
vg verify "$work/g.json" "$work/p.json"
vg report "$work/g.json"
vg run "$work/g.json" --threads 2 --verify
printf '{"format": "bufplan-graph", "version": 1, "tensors": [{"name": "x", "bytes": 4}], "ops": [{"name": "a", "type": "Relu", "inputs": ["x"], "outputs": ["nope"]}]}' > "$work/bad.json"
vg plan "$work/bad.json"
printf 'id,lower,upper,size\na,0,2,4\nb,1,3,8\nc,2,4,4\n' > "$work/i.csv"
vg pack "$work/i.csv" -o "$work/o.csv"
if [ -n "$data" ] && [ -f "$data/onnx/onnx-backend-light/light_bvlc_alexnet.onnx" ]; then
  vg plan "$data/onnx/onnx-backend-light/light_bvlc_alexnet.onnx" -o "$work/a.json"
  vg verify "$data/onnx/onnx-backend-light/light_bvlc_alexnet.onnx" "$work/a.json"
fi
[ -n "$data" ] && [ -f "$data/minimalloc/examples/input.12.csv" ] && vg pack "$data/minimalloc/examples/input.12.csv"
if [ -n "$data" ] && [ -f "$data/controlflow/silero_vad_v5.onnx" ]; then   # control flow: nested plans, cache, body executors
  sil=(--shape input=1x512 --shape state=2x1x128)
  vg plan "$data/controlflow/silero_vad_v5.onnx" "${sil[@]}" -o "$work/s.json"
  vg verify "$data/controlflow/silero_vad_v5.onnx" "$work/s.json" "${sil[@]}"
  vg plan "$data/controlflow/silero_vad_v5.onnx" "${sil[@]}" --cache "$work/cache"
  vg plan "$data/controlflow/silero_vad_v5.onnx" "${sil[@]}" --cache "$work/cache"
  vg run "$data/controlflow/silero_vad_v5.onnx" "${sil[@]}" --threads 2 --verify
fi
echo "valgrind.sh: $runs invocations, $failed with memcheck errors"
[ $failed = 0 ]
