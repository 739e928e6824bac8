#!/usr/bin/env bash
# fuzz/run.sh [SECONDS] [HARNESS...] — builds the libFuzzer harnesses with
# clang (ASan + UBSan), writes seed corpora, and runs each harness for
# SECONDS (default 30, or $BP_FUZZ_SECONDS).  Prints the executions per
# harness and in total; exits 1 if any harness found a crash, a leak or a
# timeout (the input is kept under BUILD/crashes/ — add it to tests/regress/).
#
# Seeds, made at run time (nothing is copied into the repository): the
# generated graphs, plans and CSV from fuzz_seeds, the small files of
# tests/regress/, and ../shared/data ($BP_DATA): graphs, ONNX models and
# MiniMalloc CSV under 256 KiB.
# Environment: BP_FUZZ_BUILD (default build-fuzz), BP_DATA, BP_FUZZ_JOBS (-j for the build),
# BP_FUZZ_SEED (default 1; 0 = random), BP_FUZZ_GROW (1: merge new coverage
# into fuzz/corpus/HARNESS/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-${BP_FUZZ_SECONDS:-30}}
# A fixed seed by default, so a CI run retraces the runs made here before a
# commit (same inputs in the same order, as far as the time allows);
# BP_FUZZ_SEED=0 lets libFuzzer pick one (for long exploratory runs).
seed=${BP_FUZZ_SEED:-1}
[ $# -gt 0 ] && shift
build=${BP_FUZZ_BUILD:-$root/build-fuzz}
data=${BP_DATA:-$root/../shared/data}
all=(fuzz_graph_json fuzz_onnx fuzz_csv fuzz_plan fuzz_random_graph fuzz_op_shapes fuzz_onnx_struct)
[ -f "$root/src/plan/plan_cache.c" ] && [ -f "$root/fuzz/fuzz_plan_cache.c" ] && all+=(fuzz_plan_cache)
[ -f "$root/src/plan/config.c" ] && [ -f "$root/fuzz/fuzz_config.c" ] && all+=(fuzz_config)
harnesses=("${@:-${all[@]}}")

command -v clang >/dev/null || { echo "fuzz/run.sh: clang is needed (apt-get install clang libclang-rt-14-dev)"; exit 2; }
cmake -S "$root/fuzz" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "${BP_FUZZ_JOBS:-2}" >/dev/null

seeds=$build/seeds
rm -rf "$seeds"
for h in "${all[@]}"; do mkdir -p "$seeds/$h" "$build/corpus/$h"; done
mkdir -p "$build/crashes"
"$build/fuzz_seeds" "$seeds"
copy_small() {  # copy_small HARNESS MAXBYTES FILE...
  local h=$1 max=$2; shift 2
  for f in "$@"; do
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -le "$max" ] && cp "$f" "$seeds/$h/$(echo "$f" | md5sum | cut -c1-12)-$(basename "$f")"
  done
  return 0
}
if [ -d "$data" ]; then
  shopt -s globstar nullglob
  copy_small fuzz_graph_json 262144 "$data"/graphs/**/*.json
  copy_small fuzz_onnx 262144 "$data"/onnx/**/*.onnx
  copy_small fuzz_csv 262144 "$data"/minimalloc/**/*.csv
fi
for h in "${all[@]}"; do
  [ -d "$root/tests/regress/$h" ] && cp "$root/tests/regress/$h"/* "$seeds/$h/" 2>/dev/null || true
done
# the structure-aware ONNX fuzzer also starts from fuzz_onnx's seeds; the
# corpora kept in the repository (fuzz/corpus/HARNESS/) seed their harness
cp "$seeds/fuzz_onnx"/* "$seeds/fuzz_onnx_struct/" 2>/dev/null || true
for h in "${all[@]}"; do
  [ -d "$root/fuzz/corpus/$h" ] && cp "$root/fuzz/corpus/$h"/* "$seeds/$h/" 2>/dev/null || true
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
total=0 failed=0
printf '%-20s %12s %8s %s\n' harness executions seconds result
for h in "${harnesses[@]}"; do
  log=$build/$h.log
  set +e
  "$build/$h" -seed="$seed" -max_total_time="$secs" -timeout=25 -rss_limit_mb=2560 -max_len=262144 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$h-" "$build/corpus/$h" "$seeds/$h" >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$runs" ] || runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
  runs=${runs:-0}
  total=$((total + runs))
  result=ok
  if [ $rc -ne 0 ]; then
    result="FAILED (rc $rc, log $log)"; failed=$((failed + 1))
    grep -E "ERROR|fuzz:|SUMMARY|Test unit written" "$log" | head -8 | sed 's/^/    /'
  fi
  printf '%-20s %12s %8s %s\n' "$h" "$runs" "$secs" "$result"
done
printf '%-20s %12s\n' total "$total"
# BP_FUZZ_GROW=1: what the run found that adds coverage goes into the corpus
# kept in the repository (fuzz/corpus/HARNESS/, inputs up to 2 KiB)
if [ "${BP_FUZZ_GROW:-0}" = 1 ]; then
  for h in "${harnesses[@]}"; do
    [ -d "$root/fuzz/corpus/$h" ] && "$build/$h" -merge=1 -max_len=2048 "$root/fuzz/corpus/$h" "$build/corpus/$h" >"$build/$h.merge.log" 2>&1
  done
fi
[ $failed -eq 0 ] || { echo "fuzz/run.sh: $failed harness(es) failed"; exit 1; }
