#!/bin/bash
# bufplan viz: the SVG is well-formed XML with one rect per planned tensor;
# the HTML page, opened in headless Chromium, reports the same tensor count,
# peak and arena as the plan JSON (for both plans with --compare), shows the
# history, survives hostile names, and its screenshot is not blank.  Bad usage
# exits 2 without writing.  Without chromium the browser part prints SKIP.
. "$(dirname "$0")/harness.bash"

# expect FILE.json: the drawn-tensor count, lower bound and arena of a plan
plan_facts() {
    python3 - "$1" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
n = sum(1 for t in p["tensors"] if t["offset"] is not None and t["first"] >= 0)
print(n, p["stats"]["lower_bound_bytes"], p["arena_bytes"])
PY
}

"$CLI" gen resnet50 -o "$tmp/r50.json" || bad "gen resnet50"
"$CLI" gen transformer --layers 2 --training -o "$tmp/tt.json" || bad "gen transformer"
# a graph whose names try to break out of HTML, JSON and XML
python3 - "$tmp/evil.json" <<'PY'
import json, sys
names = ["a<b>&\"c'", "<!--", "\u2028sep", "emoji\U0001F600]]>", "x</script><script>document.title='pwned'</script>"]
tensors = [{"name": "in", "bytes": 4096}]
ops, prev = [], "in"
for i, n in enumerate(names):
    tensors.append({"name": n, "bytes": 1000 * (i + 1)})
    ops.append({"name": "op<%d>&\"" % i, "type": "Relu</script>" if i % 2 else "Conv", "inputs": [prev], "outputs": [n]})
    prev = n
g = {"format": "bufplan-graph", "version": 1, "name": "evil</title><script>", "tensors": tensors, "ops": ops,
     "inputs": ["in"], "outputs": [prev]}
json.dump(g, open(sys.argv[1], "w"))
PY

for gname in r50 tt evil; do
    g="$tmp/$gname.json"
    "$CLI" plan "$g" -o "$tmp/$gname.plan.json" -q || bad "$gname: plan exited $?"
    "$CLI" viz "$g" -o "$tmp/$gname.svg" 2>/dev/null || bad "$gname: viz -o svg exited $?"
    read -r n lb arena < <(plan_facts "$tmp/$gname.plan.json")
    python3 - "$tmp/$gname.svg" "$n" <<'PY' || bad "$gname: the SVG is not well-formed or has the wrong rects"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
rects = root.iter(ns + "rect")
rects = list(rects)
assert all(r.get("class") == "tensor" for r in rects), "a rect that is not a tensor"
assert len(rects) == int(sys.argv[2]), "%d rects for %s tensors" % (len(rects), sys.argv[2])
PY
done
command -v xmllint >/dev/null && { xmllint --noout "$tmp/evil.svg" || bad "xmllint rejects evil.svg"; }

# the SVG of an existing plan file is the same picture
"$CLI" viz "$tmp/r50.json" --plan "$tmp/r50.plan.json" -o "$tmp/r50b.svg" 2>/dev/null || bad "viz --plan"
cmp -s "$tmp/r50.svg" "$tmp/r50b.svg" || bad "viz --plan drew a different picture"

# pages: plain, compare (both syntaxes), history
"$CLI" plan "$tmp/r50.json" -s given -a color -o "$tmp/r50.given.json" -q || bad "plan -s given"
"$CLI" plan "$tmp/r50.json" --format csv -o "$tmp/r50.events.csv" -q || bad "plan --format csv"
"$CLI" viz "$tmp/r50.json" -o "$tmp/r50.html" --compare -s given -a color --history "$tmp/r50.events.csv" 2>/dev/null \
    || bad "viz --compare -s given -a color --history exited $?"
"$CLI" viz "$tmp/r50.json" --compare "-s given -a color" -o "$tmp/r50q.html" 2>/dev/null || bad "viz --compare \"...\" exited $?"
"$CLI" viz "$tmp/tt.json" -o "$tmp/tt.html" 2>/dev/null || bad "viz tt exited $?"
"$CLI" viz "$tmp/evil.json" -o "$tmp/evil.html" --color buffer 2>/dev/null || bad "viz evil exited $?"
for f in r50 r50q tt evil; do
    grep -qE 'https?://[^" ]*\.(js|css|woff)|<script[^>]* src=|<link ' "$tmp/$f.html" && bad "$f.html loads something from outside"
done
# both compare syntaxes give the same data
python3 - "$tmp/r50.html" "$tmp/r50q.html" <<'PY' || bad "--compare -s given and --compare \"-s given\" differ"
import json, re, sys
def data(p):
    t = open(p, encoding="utf-8").read()
    m = re.search(r'<script type="application/json" id="bp-data">(.*?)</script>', t, re.S)
    d = json.loads(m.group(1))
    for P in d["plans"]:
        P.pop("seconds")
    d.pop("history")
    return d
assert data(sys.argv[1]) == data(sys.argv[2])
PY

# bad usage: exit 2, a message, no file
expect2() {
    local what="$1"; shift
    "$CLI" "$@" > "$tmp/out" 2> "$tmp/err"
    local rc=$?
    [ $rc -eq 2 ] || bad "$what: exit $rc, want 2"
    [ -s "$tmp/err" ] || bad "$what: no message on stderr"
}
expect2 "no -o" viz "$tmp/r50.json"
expect2 "no graph" viz -o "$tmp/x.html"
expect2 "unknown option" viz "$tmp/r50.json" -o "$tmp/x.html" --frobnicate
expect2 "compare svg" viz "$tmp/r50.json" -o "$tmp/x.svg" --compare -s given
expect2 "bad compare words" viz "$tmp/r50.json" -o "$tmp/x.html" --compare "-s nosuch -a color"
expect2 "bad scheduler" viz "$tmp/r50.json" -o "$tmp/x.html" -s nosuch
expect2 "bad color" viz "$tmp/r50.json" -o "$tmp/x.html" --color purple
expect2 "missing history" viz "$tmp/r50.json" -o "$tmp/x.html" --history "$tmp/nope.csv"
grep -q "nope.csv" "$tmp/err" || bad "missing history: the message does not name the file"
printf 'event,tensor,offset\nALLOC,x,abc\n' > "$tmp/bad.csv"
expect2 "bad history" viz "$tmp/r50.json" -o "$tmp/x.html" --history "$tmp/bad.csv"
grep -q "bad.csv:2" "$tmp/err" || bad "bad history: the message does not name file and line"
expect2 "missing graph" viz "$tmp/nope.json" -o "$tmp/x.html"
[ -e "$tmp/x.html" ] || [ -e "$tmp/x.svg" ] && bad "an output file was written after an error"
"$CLI" viz --help | grep -q -- "--compare" || bad "viz --help does not describe --compare"

# ---- the browser ----
find_chrome "browser checks not run"
chrome() { chrome_run --virtual-time-budget=3000 "$@"; }

# check_dom PAGE PLAN.json [SUFFIX]: the page's numbers equal the plan's
check_dom() {
    python3 - "$1" "$2" "${3:-}" <<'PY'
import json, re, sys, html
dom, plan, sfx = open(sys.argv[1], encoding="utf-8").read(), json.load(open(sys.argv[2])), sys.argv[3]
def span(i):
    m = re.search(r'id="%s"[^>]*>([^<]*)<' % re.escape(i + sfx), dom)
    assert m, "no element %s in the DOM" % (i + sfx)
    return html.unescape(m.group(1))
assert 'id="status">ready<' in dom, "the page did not finish (status is not ready)"
n = sum(1 for t in plan["tensors"] if t["offset"] is not None and t["first"] >= 0)
got = (int(span("tensor-count")), int(span("peak-bytes")), int(span("arena-bytes")))
want = (n, plan["stats"]["lower_bound_bytes"], plan["arena_bytes"])
assert got == want, "page says count/peak/arena %s, plan says %s" % (got, want)
assert int(span("peak-step")) == plan["stats"]["peak_step"], "peak step"
m = re.search(r'id="warn"[^>]*>([^<]*)<', dom)
assert not m or not m.group(1), "page warning: " + m.group(1)
PY
}

chrome --dump-dom "file://$tmp/r50.html" > "$tmp/r50.dom" || bad "chromium --dump-dom r50.html exited $?"
check_dom "$tmp/r50.dom" "$tmp/r50.plan.json" || bad "r50.html: the page disagrees with the plan"
check_dom "$tmp/r50.dom" "$tmp/r50.given.json" -2 || bad "r50.html: the compared plan disagrees with -s given -a color"
python3 - "$tmp/r50.dom" "$tmp/r50.events.csv" <<'PY' || bad "r50.html: the history panel is wrong"
import csv, re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
rows = list(csv.DictReader(open(sys.argv[2])))
allocs = sum(1 for r in rows if r["event_type"] == "ALLOC" and r["offset"] not in ("", "null"))
m = re.search(r'id="history-tenant-count">(\d+)<', dom)
assert m and int(m.group(1)) == allocs, "history tenants %s, want %d" % (m and m.group(1), allocs)
m = re.search(r'id="history-conflict-count">(\d+)<', dom)
assert m and m.group(1) == "0", "a sound plan's history shows overlaps"
PY
chrome --dump-dom "file://$tmp/evil.html" > "$tmp/evil.dom" || bad "chromium --dump-dom evil.html exited $?"
check_dom "$tmp/evil.dom" "$tmp/evil.plan.json" || bad "evil.html: the page disagrees with the plan"
python3 - "$tmp/evil.dom" <<'PY' || bad "evil.html: a name got out of its string"
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
assert "pwned" not in re.sub(r'<script type="application/json".*?</script>', "", dom, flags=re.S).split("<title>")[1].split("</title>")[0]
assert len(re.findall(r"<script", dom)) == 2, "%d script elements" % len(re.findall(r"<script", dom))
assert "x&lt;/script&gt;&lt;script&gt;" in dom, "the hostile name is not shown as text in the peak list"
PY

# screenshot: a real picture, not a blank page
chrome --window-size=1200,900 --screenshot="$tmp/shot.png" "file://$tmp/r50.html" >/dev/null || bad "chromium --screenshot exited $?"
python3 - "$tmp/shot.png" "$(dirname "$0")/../viz" <<'PY' || bad "the screenshot is blank or not a PNG"
import sys
sys.path.insert(0, sys.argv[2])
from shots import decode, px   # the PNG decoder of tests/viz/shots.py
w, h, rows = decode(sys.argv[1])
sample = [px(rows, x, y) for y in range(0, h, 3) for x in range(0, w, 3)]
colors, ink = set(sample), sum(1 for c in sample if c != (255, 255, 255))
assert w >= 1000 and h >= 800, "size %dx%d" % (w, h)
share = ink / float(len(sample))
assert len(colors) >= 12, "only %d colors" % len(colors)
assert share > 0.08, "only %.1f%% of the pixels are not white" % (100 * share)
print("screenshot %dx%d: %d colors, %.0f%% ink" % (w, h, len(colors), 100 * share))
PY
# the history `bufplan run --history` writes is one that `viz --history` reads:
# every tenant's events arrive (round trip)
"$CLI" gen resnet50 -o "$tmp/rt.json" || bad "gen"
"$CLI" run "$tmp/rt.json" --threads 2 --history "$tmp/rt.hist" >/dev/null || bad "run --history"
"$CLI" viz "$tmp/rt.json" --history "$tmp/rt.hist" -o "$tmp/rt.html" 2>"$tmp/rt.err" || bad "viz --history of run's history: $(cat "$tmp/rt.err")"
n_hist=$(grep -c -E '^(alloc|write|read|last-read|free) [0-9]' "$tmp/rt.hist")
n_page=$(grep -o '"history":{"source":"[^"]*","unit":"tick","events":[0-9]*' "$tmp/rt.html" | sed 's/.*"events"://')
[ -n "$n_page" ] && [ "$n_page" = "$n_hist" ] || bad "viz read ${n_page:-no} events of the history's $n_hist"
exit $fail
