#!/bin/bash
# bufplan pack: MiniMalloc CSV in, the same rows plus an offset column out,
# checked here by an independent python overlap check; --capacity answers
# fits (exit 0) / does not fit (exit 1); bad input exits 2 naming file:line.
set -u
CLI=${BP_CLI:?BP_CLI is not set}
DATA=${BP_DATA:?BP_DATA is not set}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

# valid IN OUT MAXARENA: OUT has IN's rows plus offsets, no two buffers live
# together overlap, and the arena is at most MAXARENA (0 = any).
valid() {
    python3 - "$1" "$2" "$3" <<'PY' || bad "packing $2 of $1 is invalid"
import csv, sys
src, out, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
a = list(csv.DictReader(open(src)))
b = list(csv.DictReader(open(out)))
assert len(a) == len(b), "row count"
for x, y in zip(a, b):
    for k in x:
        if k != "offset":
            assert x[k] == y[k], (k, x[k], y[k])
rows = [(int(r["lower"]), int(r["upper"]), int(r["size"]), int(r["offset"])) for r in b]
arena = max([o + s for l, u, s, o in rows if s] + [0])
assert cap == 0 or arena <= cap, "arena %d > %d" % (arena, cap)
for i in range(len(rows)):
    li, ui, si, oi = rows[i]
    for j in range(i):
        lj, uj, sj, oj = rows[j]
        if si and sj and li < uj and lj < ui and oi < oj + sj and oj < oi + si:
            raise SystemExit("rows %d and %d overlap" % (i, j))
print(arena)
PY
}

ex=$DATA/minimalloc/examples/input.12.csv
for a in naive color bestfit search; do
    "$CLI" pack "$ex" -a $a -o "$tmp/ex.$a.csv" --quiet || bad "pack -a $a exited $?"
    valid "$ex" "$tmp/ex.$a.csv" 0 >/dev/null
done
[ "$(valid "$ex" "$tmp/ex.search.csv" 12)" = 12 ] || bad "search on the example is not 12"
# summary on stderr, CSV on stdout without -o
"$CLI" pack "$ex" >"$tmp/out.csv" 2>"$tmp/err" || bad "pack to stdout failed"
grep -q "arena 12 bytes" "$tmp/err" || bad "summary lacks the arena: $(cat "$tmp/err")"
grep -q "optimal" "$tmp/err" || bad "summary lacks optimality"
head -1 "$tmp/out.csv" | grep -q "^id,lower,upper,size,offset$" || bad "header: $(head -1 "$tmp/out.csv")"

# capacity: fits at 12 (exit 0), not at 11 (exit 1)
"$CLI" pack "$ex" --capacity 12 -o "$tmp/c12.csv" 2>"$tmp/err"; rc=$?
[ $rc = 0 ] && grep -q "capacity 12: fits" "$tmp/err" || bad "capacity 12: rc $rc $(cat "$tmp/err")"
"$CLI" pack "$ex" --capacity 11 -o "$tmp/c11.csv" 2>"$tmp/err"; rc=$?
[ $rc = 1 ] && grep -q "does not fit" "$tmp/err" || bad "capacity 11: rc $rc $(cat "$tmp/err")"

# a real instance and an ONNX lifetime file (extra columns, zero sizes)
C=$DATA/minimalloc/challenging/C.1048576.csv
"$CLI" pack "$C" --time-limit 5 -o "$tmp/C.csv" --quiet || bad "pack C failed"
valid "$C" "$tmp/C.csv" 1048576 >/dev/null
det=$DATA/onnx/lifetimes/ch_PP-OCRv4_det_infer.csv
"$CLI" pack "$det" -a bestfit -o "$tmp/det.csv" --quiet || bad "pack det failed"
valid "$det" "$tmp/det.csv" 0 >/dev/null
# the packing read back is fully pre-placed and packs to the same arena
"$CLI" pack "$tmp/C.csv" -a bestfit -o "$tmp/C2.csv" --quiet || bad "re-pack failed"
cmp -s <(cut -d, -f5 "$tmp/C.csv") <(cut -d, -f5 "$tmp/C2.csv") || bad "pre-placed offsets changed"

# pre-placed rows: search packs the rest around them and still proves the
# optimum (b3 at 4 as in the README's output; b5 free: the optimum stays 12);
# with b5 pinned at 2 the bytes [2,6) are blocked at every time: b1 and b3,
# live together at t = 0, cannot use [0,2) and stack above 6, so the optimum
# rises to 14
printf 'id,lower,upper,size,offset\nb1,0,3,4,\nb2,3,9,4,\nb3,0,9,4,4\nb4,9,21,4,\nb5,0,21,4,\n' >"$tmp/fx.csv"
"$CLI" pack "$tmp/fx.csv" -o "$tmp/fx.out.csv" 2>"$tmp/err" || bad "pack with offsets failed"
grep -q "arena 12 bytes.*optimal" "$tmp/err" || bad "pre-placed b3: $(cat "$tmp/err")"
grep -q "^b3,0,9,4,4$" "$tmp/fx.out.csv" || bad "b3 moved: $(cat "$tmp/fx.out.csv")"
valid "$tmp/fx.csv" "$tmp/fx.out.csv" 12 >/dev/null
printf 'id,lower,upper,size,offset\nb1,0,3,4,\nb2,3,9,4,\nb3,0,9,4,\nb4,9,21,4,\nb5,0,21,4,2\n' >"$tmp/fx2.csv"
"$CLI" pack "$tmp/fx2.csv" -o "$tmp/fx2.out.csv" 2>"$tmp/err" || bad "pack with offsets failed"
grep -q "arena 14 bytes.*optimal" "$tmp/err" || bad "pre-placed b5: $(cat "$tmp/err")"
valid "$tmp/fx2.csv" "$tmp/fx2.out.csv" 14 >/dev/null

# bad input: exit 2 with file:line and the id
printf 'id,lower,upper,size\na,0,3,4\nb,5,2,4\n' >"$tmp/bad.csv"
"$CLI" pack "$tmp/bad.csv" 2>"$tmp/err" >/dev/null; rc=$?
[ $rc = 2 ] && grep -q "bad.csv:3: buffer \"b\"" "$tmp/err" || bad "bad row: rc $rc $(cat "$tmp/err")"
printf 'id,lower,upper,size\na,0,3,4\na,1,3,4\n' >"$tmp/dup.csv"
"$CLI" pack "$tmp/dup.csv" 2>"$tmp/err" >/dev/null; rc=$?
[ $rc = 2 ] && grep -q "duplicate id" "$tmp/err" || bad "duplicate: rc $rc $(cat "$tmp/err")"
"$CLI" pack "$tmp/nonexistent.csv" 2>/dev/null; [ $? = 2 ] || bad "missing file not exit 2"
"$CLI" pack "$ex" -a magic 2>/dev/null; [ $? = 2 ] || bad "unknown assigner not exit 2"
"$CLI" pack "$ex" --capacity x 2>/dev/null; [ $? = 2 ] || bad "bad capacity not exit 2"
"$CLI" pack 2>/dev/null; [ $? = 2 ] || bad "no file not exit 2"
"$CLI" pack --help | grep -q "usage: bufplan pack" || bad "--help"
exit $fail
