#!/usr/bin/env bash
# bench/run.sh pool [--quick] [--synthetic] — bufplan's pool against glibc, jemalloc, mimalloc
# and tcmalloc, side by side: alloc/free traces replayed by 1 and 2 threads.
# One command prints the whole table (BP_BUILD = a Release build, BP_DATA =
# the shared data; bench/run.sh sets both).
# Traces (bench/pool/trace.c): generated graphs (resnet50, transformer,
# randwire) and ONNX models under $BP_DATA/onnx run without a plan (Kahn
# order, every storage allocated when produced and freed after its last
# reader), plus a synthetic stress trace.  With 2 threads each thread replays
# its own copy of the trace on the same allocator.  "pool" is the pool through
# one bp_pool_local handle per thread (what a user does on each worker
# thread); "pool-learn" is the same with options.learn (each handle learns
# the repeating trace, plans it and serves later replays from the plan, see
# docs/POOL.md "Learned sequences"); "pool-plain" is bp_pool_alloc /
# bp_pool_dealloc.  The ratios are given for "pool" / "pool-learn".  "floor" is the harness's own cost (pool_replay_floor: a static
# plan's offsets, free does nothing), so an allocator's own cost per call is
# its CPU ns/call minus the floor's.  Ends with the pool's fragmentation drift over long synthetic
# traces (three seeds: one trace is a random walk, see docs/POOL.md) and the
# machine's load.  --synthetic: only the synthetic rows and the drift lines
# (the large-request behaviour, in about a minute).
set -uo pipefail
quick=0; syn_only=0
for a in "$@"; do [ "$a" = --quick ] && quick=1; [ "$a" = --synthetic ] && syn_only=1; done
B="${BP_BUILD:?}"
bin="$B/bench/pool"
data="${BP_DATA:-/nonexistent}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
load0="$(cut -d' ' -f1-3 /proc/loadavg)"
t_start=$(date +%s)
# The synthetic trace stays at 40k events in the full mode too: its memory
# pass writes every page of ~30 GB of blocks, and the peers that return
# memory to the OS fault on every page (minutes per row on 2 cores).
min_calls=2000000; rounds=5; syn_events=40000; drift_events=1000000
onnx=(torchvision/vit_b_16 torchvision/swin_t torchvision/densenet121 torchvision/inception_v3 torchvision/mobilenet_v2)
if [ $quick = 1 ]; then min_calls=300000; rounds=3; syn_events=20000; drift_events=200000; onnx=(torchvision/vit_b_16 torchvision/mobilenet_v2); fi

allocs=(pool pool-learn pool-plain)
peers=(); missing=()
for a in glibc jemalloc mimalloc tcmalloc; do
  if [ -x "$bin/pool_replay_$a" ]; then allocs+=("$a"); peers+=("$a"); else missing+=("$a"); fi
done
declare -A peer_pkg=([jemalloc]=libjemalloc-dev [mimalloc]=libmimalloc-dev [tcmalloc]=libgoogle-perftools-dev)

traces=()
"$bin/pool_trace" synthetic 1 "$syn_events" > "$work/synthetic.csv" && traces+=("synthetic")
[ $syn_only = 1 ] && onnx=()
for g in resnet50 transformer randwire; do
  [ $syn_only = 1 ] && break
  "$bin/pool_trace" graph "$g" > "$work/$g.csv" && traces+=("$g")
done
for m in "${onnx[@]}"; do
  f="$data/onnx/$m.onnx"
  name="onnx-$(basename "$m")"
  [ -f "$f" ] && "$bin/pool_trace" graph "$f" --dim N=1 > "$work/$name.csv" 2>/dev/null && traces+=("$name")
done

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
run() { # allocator trace threads
  local exe="$bin/pool_replay_$1" extra=""
  [ "$1" = pool-plain ] && exe="$bin/pool_replay_pool" && extra="--plain"
  [ "$1" = pool-learn ] && exe="$bin/pool_replay_pool" && extra="--learn"
  "$exe" "$work/$2.csv" $extra --min-calls $min_calls --max-round-s 2 --rounds $rounds --threads "$3" 2>&1 | tail -1
}

# the table's header: the peers compared, and any that are missing
printf 'Peers: %s' "${peers[*]:-none}"
if [ ${#missing[@]} -gt 0 ]; then
  printf '; MISSING (not built, so not compared):'
  for a in "${missing[@]}"; do printf ' %s (%s)' "$a" "${peer_pkg[$a]:-glibc}"; done
  printf '; bench/run.sh installs them (BP_BENCH_INSTALL=0 skips that)'
fi
printf '\n\n'
printf '| trace | allocs | thr |'
for a in "${allocs[@]}"; do printf ' %s Mcalls/s |' "$a"; done
printf ' pool CPU ns/call | pool-learn CPU ns/call | best peer CPU ns/call |'
for a in "${allocs[@]}"; do printf ' %s peak MiB |' "$a"; done
for a in "${allocs[@]}"; do printf ' %s OS calls |' "$a"; done
printf ' pool / pool-learn vs best peer | same, CPU time | pool / pool-learn peak vs smallest peer | pool / pool-learn footprint MiB | smallest peer footprint MiB | pool / pool-learn footprint vs smallest peer | floor CPU ns/call | plan arena MiB |\n'
printf '|---|---|---|'; for _ in "${allocs[@]}" "${allocs[@]}" "${allocs[@]}"; do printf -- '---|'; done; printf -- '---|---|---|---|---|---|---|---|---|---|---|\n'
for t in "${traces[@]}"; do
  nal=$(grep -c '^ALLOC' "$work/$t.csv")
  for th in 1 2; do
    declare -A thr=() peak=() osc=() cpu=() foot=()
    for a in "${allocs[@]}"; do
      out="$(run "$a" "$t" "$th")"
      thr[$a]="$(echo " $out" | field mcalls_per_s)"
      cpu[$a]="$(echo " $out" | field cpu_ns_per_call)"
      peak[$a]="$(echo " $out" | field peak_rss_mib)"
      foot[$a]="$(echo " $out" | field peak_rss_run_mib)"
      osc[$a]="$(echo " $out" | field os_calls_after_warmup)"
      case "$a" in pool*) osc[$a]="${osc[$a]} ($(echo " $out" | field pool_os_calls_after_warmup))";; esac
      [ "$(echo " $out" | field verified)" = yes ] || thr[$a]="${thr[$a]}(unverified)"
    done
    fl="-"; fla="-"
    if [ -x "$bin/pool_replay_floor" ]; then
      out="$("$bin/pool_replay_floor" "$work/$t.csv" --min-calls $min_calls --max-round-s 2 --rounds $rounds --threads "$th" 2>&1 | tail -1)"
      fl="$(echo " $out" | field cpu_ns_per_call)"; fla="$(echo " $out" | field plan_arena_mib)"
    fi
    best=0; small=0; bcpu=0; sfoot=0
    for a in "${peers[@]}"; do
      best=$(awk -v x="${thr[$a]%%(*}" -v b="$best" 'BEGIN{print (x+0 > b+0) ? x : b}')
      bcpu=$(awk -v x="${cpu[$a]}" -v b="$bcpu" 'BEGIN{print (b+0 == 0 || x+0 < b+0) ? x : b}')
      small=$(awk -v x="${peak[$a]}" -v b="$small" 'BEGIN{print (b+0 == 0 || x+0 < b+0) ? x : b}')
      sfoot=$(awk -v x="${foot[$a]}" -v b="$sfoot" 'BEGIN{print (b+0 == 0 || x+0 < b+0) ? x : b}')
    done
    printf '| %s | %s | %s |' "$t" "$nal" "$th"
    for a in "${allocs[@]}"; do printf ' %s |' "${thr[$a]}"; done
    printf ' %s | %s | %s |' "${cpu[pool]}" "${cpu[pool-learn]}" "$bcpu"
    for a in "${allocs[@]}"; do printf ' %s |' "${peak[$a]}"; done
    for a in "${allocs[@]}"; do printf ' %s |' "${osc[$a]}"; done
    r2() { awk -v p="$1" -v q="$2" -v b="$3" -v inv="$4" 'BEGIN{ if (b <= 0 || p <= 0 || q <= 0) { printf "-"; exit }
      if (inv) printf "%.2fx / %.2fx", b / p, b / q; else printf "%.2fx / %.2fx", p / b, q / b }'; }
    printf ' %s | %s | %s | %s / %s | %s | %s | %s | %s |\n' \
      "$(r2 "${thr[pool]%%(*}" "${thr[pool-learn]%%(*}" "$best" 0)" \
      "$(r2 "${cpu[pool]}" "${cpu[pool-learn]}" "$bcpu" 1)" \
      "$(r2 "${peak[pool]}" "${peak[pool-learn]}" "$small" 0)" \
      "${foot[pool]}" "${foot[pool-learn]}" "$sfoot" \
      "$(r2 "${foot[pool]}" "${foot[pool-learn]}" "$sfoot" 0)" "$fl" "$fla"
    unset thr peak osc cpu foot
  done
done
echo
echo "allocs: ALLOC rows per replay.  Mcalls/s: alloc+free calls per second (wall clock), best of $rounds timed rounds of >= $min_calls calls per thread (fewer when a round would pass ~2 s), after a warm-up replay."
echo "CPU ns/call: the threads' CPU time per call in the best round (CLOCK_THREAD_CPUTIME_ID); \"same, CPU time\" = best peer's CPU ns/call / pool's.  Less disturbed by other load than the wall clock."
echo "peak MiB: growth of peak RSS over the warm-up replay, which writes every page of every block (memory taken from the OS and used)."
echo "footprint MiB: growth of peak RSS over the whole run, after one more replay at the end that writes every page (the steady state's memory; the timed rounds write only first bytes)."
echo "floor CPU ns/call: the replay harness's own cost (trace loop, slot array, first-byte writes) with an allocator that costs next to nothing: pool_replay_floor serves each ALLOC row at an offset a static plan of the trace gave it (first fit by offset over the replay's own order; free does nothing).  An allocator's own cost is its CPU ns/call minus this.  plan arena MiB: that plan's arena (per thread), what a plan-backed pool would hold."
echo "OS calls: mmap/munmap/mremap/madvise/brk/mprotect calls of the process during the timed rounds (perf tracepoints); for the pool, its own backend calls in parentheses."
for seed in 7 8 9; do
  "$bin/pool_trace" synthetic $seed "$drift_events" > "$work/drift.csv"
  for mode in "" --plain; do
    # --no-touch: the drift lines read the pool's own counters, not RSS
    out="$("$bin/pool_replay_pool" "$work/drift.csv" $mode --no-touch --iters 1 --rounds 1 --frag-at 10000 | tail -1)"
    echo
    echo "Drift, pool${mode:+ ($mode)}, synthetic trace (seed $seed) of $drift_events events: after 10k events fragmentation $(echo " $out" | field frag_early), reserved/peak-in-use $(echo " $out" | field overhead_early); after the whole trace (replayed four times) fragmentation $(echo " $out" | field frag_late), reserved/peak-in-use $(echo " $out" | field overhead_late); backend calls after the first two replays $(echo " $out" | field pool_os_calls_after_warmup)."
  done
done
echo
echo "Load average (1, 5, 15 min): $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; $(nproc) CPUs; $(( $(date +%s) - t_start )) s."
