# Pictures a person can read, checked in Chromium screenshots by pixel
# assertions (tests/viz/shots.py): the legend's colours are drawn and
# pairwise distinct, the peak marker is visible when the peak is at the last
# step and its colour differs from every legend colour (SVG and HTML); the
# leading steps where nothing is planned are left out and the axis says so;
# y ticks are round values in one unit; the SVG and the HTML page print the
# same figures (a size that rounds on a tie); report --plot breaks its y axis
# so strategies 10% apart are far apart, and is at most 1,400 px wide.
. "$(dirname "$0")/harness.bash"
PY=/usr/bin/python3
SHOTS="$(dirname "$0")/../viz/shots.py"

# --- a graph: 8 leading views of a weight (nothing planned), then 40 ops of
# 12 types whose outputs grow, so the peak is at the last step
"$PY" - "$tmp/g.json" <<'PYG'
import json, sys
T = [{"name": "w", "shape": [64, 64], "dtype": "f32"}, {"name": "x", "shape": [1, 64], "dtype": "f32"}]
ops, prev, cur = [], "w", "x"
for i in range(8):
    T.append({"name": "wv%d" % i, "shape": [64, 64], "dtype": "f32"})
    ops.append({"name": "id%d" % i, "type": "Identity", "inputs": [prev], "outputs": ["wv%d" % i]})
    prev = "wv%d" % i
types = ["Transpose", "Concat", "Add", "Relu", "MatMul", "Shape", "Mul", "Sub", "Div", "Sigmoid", "Tanh", "Gemm"]
for i in range(40):
    T.append({"name": "t%d" % i, "shape": [i + 1, 64], "dtype": "f32"})
    ops.append({"name": "op%d" % i, "type": types[i % 12], "inputs": [cur, prev] if i % 3 == 0 else [cur], "outputs": ["t%d" % i]})
    cur = "t%d" % i
json.dump({"format": "bufplan-graph", "version": 1, "name": "grow", "tensors": T, "ops": ops, "inputs": ["x"], "weights": ["w"],
           "outputs": [cur]}, open(sys.argv[1], "w"))
PYG
"$CLI" viz "$tmp/g.json" -o "$tmp/g.svg" >/dev/null || bad "viz g.svg"
"$CLI" viz "$tmp/g.json" -o "$tmp/g.html" >/dev/null || bad "viz g.html"
grep -qF ">step (not shown: steps 0-7, nothing planned)</text>" "$tmp/g.svg" || bad "the SVG's step axis does not say that steps 0-7 are left out"
grep -qF "peak at step 47" "$tmp/g.svg" || bad "the test graph's peak is not at its last step"
# y ticks: round values (multiples of one step of 1, 2 or 5 x 10^k) in one unit, also
# where the axis passes 1 MiB (1.3 MiB: no "1000.0 KiB, 1.22 MiB")
"$PY" - "$tmp/wide.json" <<'PYG'
import json, sys
json.dump({"format": "bufplan-graph", "version": 1, "name": "wide", "tensors": [{"name": "x", "bytes": 256}, {"name": "y", "bytes": 1363200}],
           "ops": [{"name": "f", "type": "Relu", "inputs": ["x"], "outputs": ["y"]}], "inputs": ["x"], "outputs": ["y"]}, open(sys.argv[1], "w"))
PYG
"$CLI" viz "$tmp/wide.json" -o "$tmp/wide.svg" >/dev/null || bad "viz wide"
"$PY" - "$tmp/g.svg" "$tmp/wide.svg" <<'PYT' || bad "the SVG's y ticks are not round values in one unit"
import re, sys
svg = open(sys.argv[1]).read() + open(sys.argv[2]).read()
for g in re.findall(r'<g class="yticks"[^>]*>(.*?)</g>', svg):
    labels = re.findall(r">([^<]+)</text>", g)
    assert labels[0] == "0", labels
    units = {l.split()[1] for l in labels[1:]}
    assert len(units) == 1, "ticks in several units: %s" % labels
    vals = [float(l.split()[0]) for l in labels[1:]]
    step = vals[0]
    m = step / 10 ** __import__("math").floor(__import__("math").log10(step))
    assert round(m, 9) in (1, 2, 5), "step %s is not 1, 2 or 5 x 10^k" % step
    assert all(abs(v - step * (k + 1)) < 1e-9 * v for k, v in enumerate(vals)), labels
PYT
# the SVG and the page print a size that rounds on a tie the same: 897.25 KiB -> 897.3 KiB
"$PY" - "$tmp/tie.json" <<'PYG'
import json, sys
json.dump({"format": "bufplan-graph", "version": 1, "name": "tie", "tensors": [{"name": "x", "bytes": 256}, {"name": "y", "bytes": 918784}],
           "ops": [{"name": "f", "type": "Relu", "inputs": ["x"], "outputs": ["y"]}], "inputs": ["x"], "outputs": ["y"]}, open(sys.argv[1], "w"))
PYG
"$CLI" viz "$tmp/tie.json" -o "$tmp/tie.svg" >/dev/null && "$CLI" viz "$tmp/tie.json" -o "$tmp/tie.html" >/dev/null || bad "viz tie"
grep -qF "arena 897.3 KiB" "$tmp/tie.svg" || bad "the SVG does not round 897.25 KiB half up: $(grep -o 'arena [0-9.]* KiB' "$tmp/tie.svg" | head -1)"

# --- report --plot: a broken y axis, at most 1,400 px wide
"$CLI" gen transformer --layers 2 -o "$tmp/tr.json" >/dev/null || bad "gen transformer"
"$CLI" report "$tmp/tr.json" --time-limit 0.3 --plot "$tmp/rep.svg" >/dev/null || bad "report --plot"
"$PY" - "$tmp/rep.svg" <<'PYR' || bad "report --plot: the strategies are not told apart, or the chart is too wide"
import re, sys
svg = open(sys.argv[1]).read()
w = float(re.search(r'<svg [^>]*width="([\d.]+)"', svg).group(1))
assert w <= 1400, "the chart is %.0f px wide" % w
assert 'class="break"' in svg, "no broken axis although naive is far above the other arenas"
units = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}
bars = [(float(v) * units[u], float(h)) for h, v, u in
        re.findall(r'<rect class="bar" x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)"[^>]*><title>[^:]*: ([\d.]+) (\w+)</title>', svg)]
assert len(bars) >= 8, bars
pairs = [(a, b) for a in bars for b in bars if b[0] >= 1.1 * a[0] and b[0] <= 1.6 * a[0]]
assert pairs, "no two arenas 10-60%% apart to compare: %s" % sorted({b[0] for b in bars})
for a, b in pairs:
    assert b[1] - a[1] >= 40, "arenas %.0f and %.0f (%.0f%% apart) are bars %.1f and %.1f px high" % (a[0], b[0], 100 * (b[0] / a[0] - 1), a[1], b[1])
PYR

# --- the browser
find_chrome "screenshots not checked"
chrome() { chrome_run --hide-scrollbars --force-device-scale-factor=1 "$@"; }
H=$(sed -n 's/.*<svg [^>]*height="\([0-9]*\)".*/\1/p' "$tmp/g.svg" | head -1)
chrome --window-size=1000,"$H" --screenshot="$tmp/svg.png" "file://$tmp/g.svg" >/dev/null || bad "chromium --screenshot g.svg exited $?"
"$PY" "$SHOTS" svg "$tmp/g.svg" "$tmp/svg.png" || bad "the SVG screenshot: legend or peak marker missing or not distinct"
chrome --virtual-time-budget=3000 --window-size=1200,900 --screenshot="$tmp/html.png" "file://$tmp/g.html" >/dev/null ||
    bad "chromium --screenshot g.html exited $?"
"$PY" - "$tmp/g.html" "$tmp/data.json" <<'PYD'
import re, sys
m = re.search(r'<script type="application/json" id="bp-data">(.*?)</script>', open(sys.argv[1], encoding="utf-8").read(), re.S)
open(sys.argv[2], "w", encoding="utf-8").write(m.group(1))
PYD
"$PY" "$SHOTS" html "$tmp/html.png" "$tmp/data.json" || bad "the HTML screenshot: legend or peak marker missing or not distinct"
chrome --virtual-time-budget=3000 --dump-dom "file://$tmp/tie.html" >"$tmp/tie.dom" || bad "chromium --dump-dom tie.html exited $?"
grep -qF 'id="arena-h">897.3 KiB<' "$tmp/tie.dom" || bad "the page and the SVG disagree on 897.25 KiB: $(grep -o 'id="arena-h">[^<]*' "$tmp/tie.dom")"
exit $fail
