# The examples in docs/CLI.md are what the CLI prints today: every block
# marked <!-- example --> is run as a terminal session and its outputs are
# compared with the documented ones, times normalised (doc_examples.py; with
# --update it rewrites the document's outputs).  The checker itself is
# tested on a small document: a stale output is reported, --update fixes it.
. "$(dirname "$0")/harness.bash"
PY=/usr/bin/python3
HERE="$(cd "$(dirname "$0")" && pwd)"
SRC="$HERE/../.."
DATA=${BP_DATA:-$SRC/../shared/data}
"$PY" "$HERE/doc_examples.py" "$SRC/docs/CLI.md" "$CLI" "$DATA" >"$tmp/out.txt" 2>&1 ||
  bad "docs/CLI.md has stale examples (regenerate: tests/cli/doc_examples.py docs/CLI.md build/bufplan ../shared/data --update):
$(cat "$tmp/out.txt")"
grep -qE "docs/CLI.md: [1-9][0-9]* examples, 0 outputs differ" "$tmp/out.txt" || bad "no examples checked: $(cat "$tmp/out.txt")"

# the checker: a stale output fails naming the line, a time differs without failing, --update rewrites
cat >"$tmp/doc.md" <<'MD'
# doc
<!-- example -->
```
$ bufplan gen chain --nodes 3 -o c.json
$ bufplan plan c.json | grep -c "plan time    0.000 ms"
7
$ echo done in 12.5 ms
done in 3 ms
```
MD
expect_msg 1 "doc.md:5: \`bufplan plan c.json | grep -c \"plan time    0.000 ms\"\` printed:" "$PY" "$HERE/doc_examples.py" "$tmp/doc.md" "$CLI" "$DATA"
grep -qF "1 outputs differ" "$tmp/expect.out" || bad "the checker counts the time-only difference: $(cat "$tmp/expect.out")"
"$PY" "$HERE/doc_examples.py" "$tmp/doc.md" "$CLI" "$DATA" --update >/dev/null || bad "--update failed"
"$PY" "$HERE/doc_examples.py" "$tmp/doc.md" "$CLI" "$DATA" >/dev/null || bad "after --update the document is still stale: $(cat "$tmp/doc.md")"
exit $fail
