#!/bin/bash
# bufplan plan --cache DIR: a miss plans and saves, a hit gives the same plan
# file; a corrupt or truncated cache file is a warning and a re-plan (exit 0);
# other options or shapes are other keys; concurrent plans share the cache.
. "$(dirname "$0")/harness.bash"

"$CLI" gen transformer --symbolic-seq --layers 2 -o "$tmp/t.json" || bad "gen"
C="$tmp/cache"
"$CLI" plan "$tmp/t.json" --dim S=64 --cache "$C" -o "$tmp/p1.json" >"$tmp/r1.txt" 2>&1 || bad "first plan"
grep -q "miss, plan saved" "$tmp/r1.txt" || bad "first plan should miss: $(cat "$tmp/r1.txt")"
[ "$(ls "$C" | wc -l)" = 1 ] || bad "one cache file expected: $(ls "$C")"
"$CLI" plan "$tmp/t.json" --dim S=64 --cache "$C" -o "$tmp/p2.json" >"$tmp/r2.txt" 2>&1 || bad "second plan"
grep -q "plan cache   hit" "$tmp/r2.txt" || bad "second plan should hit: $(cat "$tmp/r2.txt")"
# the same plan, apart from the timings
strip() { python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); p.pop("stats",None); print(json.dumps(p,sort_keys=True))' "$1"; }
[ "$(strip "$tmp/p1.json")" = "$(strip "$tmp/p2.json")" ] || bad "cached plan differs"
"$CLI" verify "$tmp/t.json" "$tmp/p2.json" --dim S=64 >/dev/null || bad "the cached plan does not verify"

# other shapes and other options are other keys
"$CLI" plan "$tmp/t.json" --dim S=65 --cache "$C" -q || bad "S=65"
"$CLI" plan "$tmp/t.json" --dim S=64 -s dfs --cache "$C" -q || bad "dfs"
[ "$(ls "$C" | wc -l)" = 3 ] || bad "three cache files expected: $(ls "$C")"

# corrupt every cache file: warning, re-plan, exit 0, then a hit again
for f in "$C"/*.bpc; do printf 'garbage' | dd of="$f" bs=1 seek=100 conv=notrunc 2>/dev/null; done
"$CLI" plan "$tmp/t.json" --dim S=64 --cache "$C" -o "$tmp/p3.json" >"$tmp/r3.txt" 2>&1 || bad "plan over a corrupt file"
grep -q "warning: plan cache" "$tmp/r3.txt" || bad "no warning for a corrupt file"
grep -q "miss, plan saved" "$tmp/r3.txt" || bad "corrupt file should be re-planned"
[ "$(strip "$tmp/p1.json")" = "$(strip "$tmp/p3.json")" ] || bad "re-planned plan differs"
"$CLI" plan "$tmp/t.json" --dim S=64 --cache "$C" -q 2>"$tmp/r4.txt" || bad "after re-plan"
[ -s "$tmp/r4.txt" ] && bad "a warning after the file was rewritten: $(cat "$tmp/r4.txt")"
# truncated
for f in "$C"/*.bpc; do truncate -s 50 "$f"; done
"$CLI" plan "$tmp/t.json" --dim S=65 --cache "$C" -q 2>"$tmp/r5.txt" || bad "plan over a truncated file"
grep -q "truncated" "$tmp/r5.txt" || bad "no warning for a truncated file: $(cat "$tmp/r5.txt")"

# 4 concurrent processes on one key: all succeed, no warning, no temp file left
rm -rf "$C"
for i in 1 2 3 4; do
    "$CLI" plan "$tmp/t.json" --dim S=96 --cache "$C" -q 2>"$tmp/c$i.txt" &
done
wait
for i in 1 2 3 4; do [ -s "$tmp/c$i.txt" ] && bad "concurrent plan $i: $(cat "$tmp/c$i.txt")"; done
[ "$(ls -A "$C" | wc -l)" = 1 ] || bad "leftover files: $(ls -A "$C")"

# the cache directory must be a directory
touch "$tmp/file"
"$CLI" plan "$tmp/t.json" --dim S=64 --cache "$tmp/file" -q 2>/dev/null; [ $? -eq 2 ] || bad "--cache on a file should exit 2"
# a hit reports what is true: the same makespan and proofs, and the load time
"$CLI" gen resnet50 -o "$tmp/r.json" || bad "gen resnet50"
"$CLI" plan "$tmp/r.json" --cache "$tmp/c2" >"$tmp/h1.txt" || bad "cache miss run"
"$CLI" plan "$tmp/r.json" --cache "$tmp/c2" >"$tmp/h2.txt" || bad "cache hit run"
grep -q "plan cache   hit" "$tmp/h2.txt" || bad "the second run is not a hit"
[ "$(grep makespan "$tmp/h1.txt")" = "$(grep makespan "$tmp/h2.txt")" ] ||
  bad "a hit reports another makespan or proof: $(grep makespan "$tmp/h1.txt") / $(grep makespan "$tmp/h2.txt")"
grep -q "loaded from the cache in [0-9.]* ms; planned originally in" "$tmp/h2.txt" ||
  bad "a hit does not report its load time: $(grep 'plan time' "$tmp/h2.txt")"
exit $fail
