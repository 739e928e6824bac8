# The pool benchmark names the peers it compares and those it lacks: the
# table's header says "Peers: glibc ..." and lists each missing peer with
# its package, so a machine without jemalloc, mimalloc or tcmalloc does not
# compare against glibc alone silently.  Replays here are stubs (the suite's
# table logic only); bench/run.sh installs the peers (checked by name).
. "$(dirname "$0")/harness.bash"
SRC=${BP_SRC:-$(dirname "$0")/../..}
mkdir -p "$tmp/b/bench/pool"
stub() {  # NAME BODY: an executable stub in the fake build tree
  printf '#!/bin/sh\n%s\n' "$2" >"$tmp/b/bench/pool/$1"; chmod +x "$tmp/b/bench/pool/$1"
}
stub pool_trace 'echo "ALLOC,1,256"; echo "FREE,1"'
line='echo "x mcalls_per_s=1 cpu_ns_per_call=1 peak_rss_mib=1 peak_rss_run_mib=1 os_calls_after_warmup=0 verified=yes"'
for a in pool floor glibc mimalloc; do stub "pool_replay_$a" "$line"; done
BP_BUILD=$tmp/b BP_DATA=$tmp bash "$SRC/bench/suites/pool.sh" --synthetic >"$tmp/out" 2>&1 || bad "pool.sh failed: $(cat "$tmp/out")"
head -1 "$tmp/out" | grep -q '^Peers: glibc mimalloc; MISSING' || bad "the header does not name the peers: $(head -1 "$tmp/out")"
for p in "jemalloc (libjemalloc-dev)" "tcmalloc (libgoogle-perftools-dev)"; do
  head -1 "$tmp/out" | grep -qF "$p" || bad "the header does not name the missing $p: $(head -1 "$tmp/out")"
done
grep -q '| mimalloc Mcalls/s |' "$tmp/out" || bad "the present peer mimalloc has no column"
! grep -q 'jemalloc Mcalls/s' "$tmp/out" || bad "a missing peer has a column"
for a in jemalloc tcmalloc; do stub "pool_replay_$a" "$line"; done
BP_BUILD=$tmp/b BP_DATA=$tmp bash "$SRC/bench/suites/pool.sh" --synthetic >"$tmp/out" 2>&1 || bad "pool.sh failed"
head -1 "$tmp/out" | grep -qx 'Peers: glibc jemalloc mimalloc tcmalloc' || bad "all peers: $(head -1 "$tmp/out")"
for p in libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev; do
  grep -q "PEER_DEPS=.*$p" "$SRC/bench/run.sh" || bad "bench/run.sh does not install $p"
done
exit $fail
