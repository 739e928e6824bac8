#!/bin/bash
# bufplan report: every scheduler the build has x every assigner, in text,
# CSV and JSON that agree with each other and with `bufplan plan` for the same
# pair; --plot writes a well-formed SVG; bad usage exits 2.
. "$(dirname "$0")/harness.bash"

"$CLI" gen diamond --seed 4 -o "$tmp/d.json" || bad "gen diamond"
"$CLI" report "$tmp/d.json" --time-limit 0.5 --format json -o "$tmp/r.json" --plot "$tmp/r.svg" || bad "report --format json exited $?"
"$CLI" report "$tmp/d.json" --time-limit 0.5 --format csv > "$tmp/r.csv" || bad "report --format csv exited $?"
"$CLI" report "$tmp/d.json" --time-limit 0.5 > "$tmp/r.txt" || bad "report (text) exited $?"

python3 - "$tmp/r.json" "$tmp/r.csv" "$tmp/r.txt" "$tmp/r.svg" <<'PY' || bad "the report formats disagree or are malformed"
import csv, json, sys, xml.etree.ElementTree as ET
r = json.load(open(sys.argv[1]))
assert r["format"] == "bufplan-report" and r["version"] == 1
rows = r["rows"]
assigners = ["naive", "color", "bestfit", "search"]
scheds = []
for row in rows:
    if row["scheduler"] not in scheds:
        scheds.append(row["scheduler"])
assert len(rows) == len(scheds) * len(assigners), "%d rows for %d schedulers" % (len(rows), len(scheds))
assert "kahn" in scheds and "given" in scheds, scheds
assert not set(scheds) & set(r["skipped"]), "a skipped scheduler has rows"
assert len(scheds) + len(r["skipped"]) == 8, "schedulers missing from both lists"
for row in rows:
    if row["status"] != "ok":
        continue
    assert row["verified"] is True, row
    assert row["arena_bytes"] >= row["lower_bound_bytes"] > 0, row
    assert abs(row["ratio_naive"] - row["arena_bytes"] / row["naive_bytes"]) < 1e-5, row
    assert row["plan_seconds"] >= 0
ok = [x for x in rows if x["status"] == "ok"]
assert any(x["scheduler"] == "kahn" and x["assigner"] == "bestfit" for x in ok)
# the naive assigner never beats bestfit on the same order
for s in scheds:
    by = {x["assigner"]: x for x in ok if x["scheduler"] == s}
    if "naive" in by and "bestfit" in by:
        assert by["naive"]["arena_bytes"] >= by["bestfit"]["arena_bytes"], s
c = list(csv.DictReader(open(sys.argv[2])))
assert len(c) == len(rows)
for a, b in zip(c, rows):
    assert (a["scheduler"], a["assigner"], a["status"]) == (b["scheduler"], b["assigner"], b["status"])
    if b["status"] == "ok":
        assert int(a["arena_bytes"]) == b["arena_bytes"] and int(a["lower_bound_bytes"]) == b["lower_bound_bytes"]
text = open(sys.argv[3]).read()
for s in scheds:
    assert s in text
for s in r["skipped"]:
    assert s in text.split("not in this build:")[1]
svg = ET.parse(sys.argv[4]).getroot()
bars = list(svg.iter("{http://www.w3.org/2000/svg}rect"))
assert len(bars) == len(ok), "%d bars for %d plans" % (len(bars), len(ok))
PY

# the kahn + bestfit row is what `bufplan plan` gets
"$CLI" plan "$tmp/d.json" -s kahn -a bestfit -o "$tmp/p.json" -q || bad "plan exited $?"
python3 - "$tmp/r.json" "$tmp/p.json" <<'PY' || bad "report and plan disagree on kahn + bestfit"
import json, sys
r, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
row = [x for x in r["rows"] if x["scheduler"] == "kahn" and x["assigner"] == "bestfit"][0]
assert row["arena_bytes"] == p["arena_bytes"], (row["arena_bytes"], p["arena_bytes"])
assert row["lower_bound_bytes"] == p["stats"]["lower_bound_bytes"]
PY

# quiet when stderr is not a terminal
"$CLI" report "$tmp/d.json" --time-limit 0.2 > /dev/null 2> "$tmp/err" || bad "report exited $?"
grep -q $'\r' "$tmp/err" && bad "a progress line went to a non-terminal stderr"

expect2() {
    local what="$1"; shift
    "$CLI" "$@" > "$tmp/out" 2> "$tmp/err"
    local rc=$?
    [ $rc -eq 2 ] || bad "$what: exit $rc, want 2"
    [ -s "$tmp/err" ] || bad "$what: no message on stderr"
}
expect2 "no graph" report
expect2 "bad format" report "$tmp/d.json" --format yaml
expect2 "-s" report "$tmp/d.json" -s kahn
expect2 "unknown option" report "$tmp/d.json" --frobnicate
expect2 "missing graph" report "$tmp/nope.json"
expect2 "bad time" report "$tmp/d.json" --time-limit abc
expect2 "unwritable plot" report "$tmp/d.json" --time-limit 0.1 --plot "$tmp/no/such/dir/r.svg"
"$CLI" report --help | grep -q "usage: bufplan report" || bad "report --help"
exit $fail
