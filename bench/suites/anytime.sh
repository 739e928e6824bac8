#!/usr/bin/env bash
# best as an anytime search: the peak of `best` before the anytime phase
# (built from BP_ANYTIME_BASE, default the commit before it), `best` now and
# `optimal`, at --time-limit 1 and 10 (10 is the default limit: there best
# keeps its default budget and runs no anytime phase), on 5 random layered
# DAGs of 500 ops, the training graphs and the torchvision ONNX models; at 60
# on two layered DAGs and regnet_y_400mf (--quick: the layered DAGs and
# three training graphs at 1 s only).  One CSV table per binary; the rows match
# by graph and limit.
set -euo pipefail
base_rev="${BP_ANYTIME_BASE:-11d3348}"
base_src="$BP_BUILD/anytime-base-src" base_build="$BP_BUILD/anytime-base"
tr="$BP_DATA/graphs/training"
quick=0; [ "${1:-}" = --quick ] && quick=1
if git -C "$BP_ROOT" rev-parse -q --verify "$base_rev^{commit}" >/dev/null; then
  rm -rf "$base_src"; mkdir -p "$base_src"
  git -C "$BP_ROOT" archive "$base_rev" | tar -x -C "$base_src"
  cp "$BP_ROOT/bench/bench_anytime.c" "$BP_ROOT/bench/onnxdir.h" "$base_src/bench/"   # public API only: builds against the old library
  cmake -S "$base_src" -B "$base_build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$base_build" -j "$(nproc)" --target bench_anytime >/dev/null
  old="$base_build/bench/bench_anytime"
else
  echo "anytime: no commit $base_rev here (BP_ANYTIME_BASE): no column for the earlier best" >&2; old=""
fi
new="$BP_BUILD/bench/bench_anytime"
if [ $quick = 1 ]; then
  sets=("--layered 5 --graphs $tr/resnet18.json $tr/googlenet.json $tr/mobilenet_v2.json --limits 1")
else
  sets=("--layered 5 --graphs $tr/*.json --onnx $BP_DATA/onnx/torchvision --limits 1,10"
        "--layered 2 --graphs $tr/regnet_y_400mf.json --limits 60")
fi
for s in "${sets[@]}"; do
  # shellcheck disable=SC2086
  { [ -z "$old" ] || { echo "# before the anytime phase: best"; "$old" $s --sched best; }
    echo "# now: best and optimal"; "$new" $s; }
done
