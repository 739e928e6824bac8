#!/usr/bin/env bash
# bench/run.sh torch [--quick]: bufplan.torch on resnet18, mobilenet_v2,
# efficientnet_b0, vit_b_16 and a transformer encoder, inference and one
# training step (bench/torch/torch_models.py): bit-identity against eager,
# the arena, memory outside it, eager's peaks, the traced order's peak, wall
# time against eager; then the plan-cache hit.  Needs Debian's python3 with
# python3-torch and python3-torchvision (skipped, saying so, without them).
set -euo pipefail
py=/usr/bin/python3
if ! "$py" -c "import torch, torchvision" 2>/dev/null; then
  echo "torch: skipped: python3-torch and python3-torchvision are not installed"; exit 0
fi
args=()
for a in "$@"; do
  case "$a" in
    --quick) args+=(--quick --repeat 2) ;;
    --json) echo "torch: --json is not supported, printing Markdown" >&2 ;;
    *) echo "torch: unknown option $a" >&2; exit 2 ;;
  esac
done
BUFPLAN_LIBRARY="$BP_BUILD/libbufplan.so" exec "$py" "$BP_ROOT/bench/torch/torch_models.py" "${args[@]+"${args[@]}"}"
