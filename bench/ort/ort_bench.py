"""ONNX Runtime as a measured peer: per model, ORT's steady-state activation
peak (heap counter preloaded around Run(), ort_peak.js) in three configs,
against bufplan's arena (workspaces included) for the matching profile.

Columns (bytes, shown in MiB):
  ORT pattern   arena off, memory pattern on (ORT's own planner)
  ORT tensor    arena off, memory pattern off (one allocation per tensor)
  ORT arena     ORT's defaults (BFC arena), for reference
  bp ort-cpu    `bufplan plan MODEL --dim N=1 --engine ort-cpu` (the model as
                given, N bound to 1): arena, workspaces included
  gap           bp ort-cpu / ORT pattern - 1 (negative: bufplan lower)
  bp strict     `bufplan plan SAVED --engine strict -s given` on ORT's own
                optimized graph (basic level, optimizedModelFilePath), ORT's
                node order
  vs tensor     bp strict / ORT tensor - 1; "within 2%" when |.| <= 2%
  last column   `bufplan plan SAVED --engine ort-cpu -s given`, and its
                difference from ORT tensor
Every ORT run uses the basic optimization level and one intra-op thread.

usage: ort_bench.py --bufplan CLI --heapcount SO --node-path DIR --work DIR
                    [--timeout S] [--quick] MODEL.onnx...
Prints a Markdown table; exits 1 when a model that ran has its ort-cpu arena
above ORT's pattern peak.
"""
import argparse
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20


def run(cmd, timeout, env=None):
    """Runs cmd; returns (rc, stdout, stderr), rc 124 on a timeout."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %ds" % timeout


def ort_peak(a, model, config, saved=None):
    """ORT's activation peak of model in config (bytes), or a string saying why not."""
    env = dict(os.environ, LD_PRELOAD=a.heapcount, NODE_PATH=a.node_path,
               HEAPCOUNT_OUT=os.path.join(a.work, "heapcount.out"))
    cmd = ["node", os.path.join(here, "ort_peak.js"), model, config] + ([saved] if saved else [])
    rc, out, err = run(cmd, a.timeout, env)
    if rc:
        return (err.strip().splitlines() or ["exit %d" % rc])[-1][:120]
    return json.loads(out.strip().splitlines()[-1])["peak"]


def bp_arena(a, model, engine, extra):
    """bufplan's arena (bytes) for model under engine, or a string saying why not."""
    rc, out, err = run([a.bufplan, "plan", model, "--engine", engine, "--format", "json"] + extra, a.timeout)
    if rc:
        return (err.strip().splitlines() or ["exit %d" % rc])[-1][:120]
    return json.loads(out)["arena_bytes"]


def mib(v):
    return "%.2f" % (v / MIB) if isinstance(v, int) else "—"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bufplan", required=True)
    ap.add_argument("--heapcount", required=True)
    ap.add_argument("--node-path", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    rc = subprocess.run(["/usr/bin/python3", os.path.join(here, "prep_models.py"), a.work] + a.models,
                        capture_output=True, text=True)
    if rc.returncode:
        sys.stderr.write(rc.stderr)
        return 2
    print("| model | ORT pattern | ORT tensor | ORT arena | bp ort-cpu | gap | bp strict (ORT graph) | vs tensor | bp ort-cpu (ORT graph, its order) vs tensor |")
    print("|---|---|---|---|---|---|---|---|---|")
    above = []
    orig = {os.path.splitext(os.path.basename(m))[0]: m for m in a.models}
    for line in rc.stdout.splitlines():
        name, status = line.split(" ", 1)
        if status != "ok":
            print("| %s | skipped: %s ||||||||" % (name, status[5:]))
            continue
        model = os.path.join(a.work, name + ".onnx")
        saved = os.path.join(a.work, name + ".ort.onnx")
        pat = ort_peak(a, model, "mempattern", saved)
        if not isinstance(pat, int):
            print("| %s | ORT fails: %s ||||||||" % (name, pat))
            continue
        ten = ort_peak(a, model, "pertensor")
        are = ort_peak(a, model, "arena")
        bp = bp_arena(a, orig[name], "ort-cpu", ["--dim", "N=1"])
        st = bp_arena(a, saved, "strict", ["-s", "given"]) if os.path.exists(saved) else "no saved graph"
        og = bp_arena(a, saved, "ort-cpu", ["-s", "given"]) if os.path.exists(saved) else "no saved graph"
        gap = "%+.1f%%" % (100.0 * (bp / pat - 1)) if isinstance(bp, int) else (bp if isinstance(bp, str) else "—")
        if isinstance(bp, int) and bp > pat:
            above.append(name)
        if isinstance(st, int) and isinstance(ten, int):
            d = 100.0 * (st / ten - 1)
            vs = "%+.1f%% %s" % (d, "yes" if abs(d) <= 2.0 else "no")
        else:
            vs = "—"
        og_t = "%s (%+.1f%%)" % (mib(og), 100.0 * (og / ten - 1)) if isinstance(og, int) and isinstance(ten, int) else mib(og)
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (name, mib(pat), mib(ten), mib(are), mib(bp), gap, mib(st), vs, og_t),
              flush=True)
    if above:
        print("\nbp ort-cpu above ORT's pattern peak on: " + ", ".join(above))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
