#!/usr/bin/env bash
# bench/run.sh pool [--quick] — bufplan's pool against glibc, jemalloc, mimalloc
# and tcmalloc, side by side: alloc/free traces replayed 1 and 2 threads at a
# time.  Traces: the event tables of generated graphs (resnet50, transformer,
# randwire) and of the ONNX models under $BP_DATA/onnx, taken from
# `bufplan plan --format json` (skipped when the CLI cannot plan them yet),
# plus a synthetic stress trace.  Prints one Markdown table; ratios are the
# pool's throughput over the best peer's, and the pool's peak reserved bytes
# over the smallest peer's.
set -uo pipefail
quick=0
for a in "$@"; do [ "$a" = --quick ] && quick=1; done
B="${BP_BUILD:?}"
bin="$B/bench/pool"
cli="$B/bufplan"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
iters=5; syn_events=200000; max_onnx=4
if [ $quick = 1 ]; then iters=2; syn_events=40000; max_onnx=1; fi

allocs=(pool)
for a in glibc jemalloc mimalloc tcmalloc; do [ -x "$bin/pool_replay_$a" ] && allocs+=("$a"); done

traces=()
"$bin/pool_trace" synthetic 1 "$syn_events" > "$work/synthetic.csv" && traces+=("synthetic")
for g in resnet50 transformer randwire; do
  if "$cli" gen "$g" -o "$work/$g.json" >/dev/null 2>&1 &&
     "$cli" plan "$work/$g.json" --format json -o "$work/$g.plan.json" >/dev/null 2>&1 &&
     "$bin/pool_trace" plan "$work/$g.plan.json" > "$work/$g.csv" 2>/dev/null; then
    traces+=("$g")
  else
    echo "note: no trace for $g (bufplan gen/plan not available yet)" >&2
  fi
done
n=0
while IFS= read -r m; do
  [ $n -ge $max_onnx ] && break
  name="onnx-$(basename "$m" .onnx)"
  if "$cli" plan "$m" --format json -o "$work/$name.plan.json" >/dev/null 2>&1 &&
     "$bin/pool_trace" plan "$work/$name.plan.json" > "$work/$name.csv" 2>/dev/null; then
    traces+=("$name"); n=$((n + 1))
  fi
done < <(find "${BP_DATA:-/nonexistent}/onnx" -name '*.onnx' -size -20M 2>/dev/null | sort)

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }

printf '| trace | threads |'
for a in "${allocs[@]}"; do printf ' %s Mcalls/s |' "$a"; done
for a in "${allocs[@]}"; do printf ' %s peak MiB |' "$a"; done
printf ' pool OS calls after warm-up | pool fragmentation | throughput vs best peer | peak vs smallest peer |\n'
printf '|---|---|'; for _ in "${allocs[@]}" "${allocs[@]}"; do printf -- '---|'; done; printf -- '---|---|---|---|\n'
for t in "${traces[@]}"; do
  for th in 1 2; do
    declare -A thr=() peak=()
    extra=""
    for a in "${allocs[@]}"; do
      out="$("$bin/pool_replay_$a" "$work/$t.csv" --iters $iters --threads $th 2>&1 | tail -1)"
      thr[$a]="$(echo " $out" | field mcalls_per_s)"
      peak[$a]="$(echo " $out" | field peak_va_mib)"
      if [ "$a" = pool ]; then
        extra="$(echo " $out" | field os_calls_after_warmup) | $(echo " $out" | field fragmentation)"
      fi
      [ "$(echo " $out" | field verified)" = yes ] || thr[$a]="${thr[$a]}(unverified)"
    done
    best=0; small=0
    for a in "${allocs[@]}"; do
      [ "$a" = pool ] && continue
      best=$(awk -v x="${thr[$a]%%(*}" -v b="$best" 'BEGIN{print (x+0 > b+0) ? x : b}')
      small=$(awk -v x="${peak[$a]}" -v b="$small" 'BEGIN{print (b+0 == 0 || x+0 < b+0) ? x : b}')
    done
    printf '| %s | %s |' "$t" "$th"
    for a in "${allocs[@]}"; do printf ' %s |' "${thr[$a]}"; done
    for a in "${allocs[@]}"; do printf ' %s |' "${peak[$a]}"; done
    printf ' %s | %s | %s |\n' "$extra" \
      "$(awk -v p="${thr[pool]}" -v b="$best" 'BEGIN{printf (b > 0 ? "%.2fx" : "-"), p / b}')" \
      "$(awk -v p="${peak[pool]}" -v b="$small" 'BEGIN{printf (b > 0 ? "%.2fx" : "-"), p / b}')"
    unset thr peak
  done
done
echo
echo "Mcalls/s: alloc+free calls per second after one warm-up replay ($iters replays; 2 threads replay at once)."
echo "peak MiB: growth of the process's peak virtual size during the run (what the allocator reserved)."
