#!/usr/bin/python3
"""Exactness of recompute only: on small random training-like graphs (a
forward chain with skips, a backward pass reading the saved activations),
bufplan's recompute-only overhead for a fixed order (-s given) is compared
with the exact optimum of the same step model, a Checkmate-style MILP solved
with scipy.optimize.milp (HiGHS):

  S[s,v] = 1: tensor v is in the arena at step s;  R[s,v] = 1: v's producer
  runs again before the op of step s.  S[p(v),v] = 1; S[s,v] <= S[s-1,v] +
  R[s,v]; R[s,v] <= S[s,v]; every input and output of the op of step s, and
  of every op recomputed at s, is in the arena at s; the graph output at the
  last step; sum_v bytes(v) S[s,v] <= budget at every step; minimise the
  recomputed cost.

bufplan packs offsets (its arena >= the live bytes the MILP bounds), so the
MILP is a lower bound: bufplan must never fit where the MILP proves nothing
fits (a failure, exit 1); where both fit it reports the gap to the optimum
(the target is 0.5 percentage points; BENCHMARKS.md has where it stands).
usage: bench/fallback_milp.py BUFPLAN [N_GRAPHS] [--max-fwd N] [--tol PP]
(Debian's python3-scipy).  --max-fwd bounds the forward ops of a graph (the
graph has twice as many); --tol makes a gap above PP points a failure (the
ctest fallback_milp uses it).  Without scipy it exits 77 (ctest: skipped).
"""
import json, os, random, subprocess, sys, tempfile
try:
    import numpy as np
    from scipy.optimize import milp, LinearConstraint, Bounds
    from scipy.sparse import lil_matrix
except ImportError as e:
    print("skipped: scipy is missing (%s); install python3-scipy" % e)
    sys.exit(77)

def make_graph(rng, n):
    tensors, ops = [{"name": "x", "bytes": 256}], []
    weights = []
    fwd = ["x"]
    for i in range(n):
        w = "w%d" % i
        tensors.append({"name": w, "bytes": 256}); weights.append(w)
        ins = [fwd[-1], w]
        if len(fwd) > 2 and rng.random() < 0.3: ins.append(fwd[rng.randrange(1, len(fwd) - 1)])
        t = "f%d" % i
        tensors.append({"name": t, "bytes": 256 * rng.randint(1, 16)})
        ops.append({"name": "F%d" % i, "type": "Conv", "inputs": ins, "outputs": [t], "cost": rng.randint(1, 5)})
        fwd.append(t)
    g = fwd[-1]
    for i in range(n - 1, -1, -1):
        ins = [g, fwd[i + 1], fwd[i]]
        t = "g%d" % i
        tensors.append({"name": t, "bytes": 256 * rng.randint(1, 8)})
        ops.append({"name": "B%d" % i, "type": "ConvGrad", "inputs": ins, "outputs": [t], "cost": rng.randint(1, 5)})
        g = t
    return {"format": "bufplan-graph", "version": 1, "name": "m", "tensors": tensors, "ops": ops,
            "inputs": [], "weights": ["x"] + weights, "outputs": [g]}

def optimum(gr, budget):
    """The MILP optimum (recomputed cost) or None when infeasible."""
    ops = gr["ops"]; N = len(ops)
    size = {t["name"]: t["bytes"] for t in gr["tensors"]}
    ext = set(gr["weights"]) | set(gr["inputs"])
    prod = {o["outputs"][0]: s for s, o in enumerate(ops)}
    V = list(prod); vid = {v: i for i, v in enumerate(V)}
    nv = len(V)
    S = lambda s, v: s * nv + v
    R = lambda s, v: N * nv + s * nv + v
    nx = 2 * N * nv
    cost = np.zeros(nx)
    lb, ub = np.zeros(nx), np.ones(nx)
    rows = []  # (coeffs dict, lo, hi)
    for v in V:
        i, p = vid[v], prod[v]
        for s in range(N):
            if s < p: ub[S(s, i)] = 0; ub[R(s, i)] = 0
            elif s == p: lb[S(s, i)] = 1; ub[R(s, i)] = 0
            else:
                rows.append(({S(s, i): 1, S(s - 1, i): -1, R(s, i): -1}, -np.inf, 0))
                rows.append(({R(s, i): 1, S(s, i): -1}, -np.inf, 0))
                cost[R(s, i)] = ops[p]["cost"]
                for u in ops[p]["inputs"]:
                    if u not in ext: rows.append(({R(s, i): 1, S(s, vid[u]): -1}, -np.inf, 0))
    for s, o in enumerate(ops):
        for u in o["inputs"] + o["outputs"]:
            if u not in ext: lb[S(s, vid[u])] = 1
    for u in gr["outputs"]: lb[S(N - 1, vid[u])] = 1
    for s in range(N):
        rows.append(({S(s, vid[v]): size[v] for v in V}, -np.inf, budget))
    if np.any(lb > ub): return None
    A = lil_matrix((len(rows), nx)); lo = np.zeros(len(rows)); hi = np.zeros(len(rows))
    for r, (c, a, b) in enumerate(rows):
        for k, x in c.items(): A[r, k] += x
        lo[r], hi[r] = a, b
    res = milp(cost, constraints=LinearConstraint(A.tocsr(), lo, hi), integrality=np.ones(nx), bounds=Bounds(lb, ub),
               options={"time_limit": 60})
    if res.status == 2: return None        # infeasible
    if res.status != 0: return "unknown"
    return res.fun

def main():
    args = sys.argv[1:]
    opt_val = lambda name, d: float(args[args.index(name) + 1]) if name in args else d
    max_fwd, tol = int(opt_val("--max-fwd", 25)), opt_val("--tol", None)
    pos = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or not args[i - 1].startswith("--"))]
    cli, n_graphs = pos[0], int(pos[1]) if len(pos) > 1 else 40
    rng = random.Random(7)
    tmp = tempfile.mkdtemp()
    bad = fits = both = refused_ok = over = 0
    worst = 0.0
    for k in range(n_graphs):
        gr = make_graph(rng, rng.randint(3, max_fwd))
        total = sum(o["cost"] for o in gr["ops"])
        path = os.path.join(tmp, "g.json")
        json.dump(gr, open(path, "w"))
        base = os.path.join(tmp, "b.json")
        subprocess.run([cli, "plan", path, "-s", "given", "-q", "-o", base], check=True)
        arena = json.load(open(base))["arena_bytes"]
        budget = rng.randint(arena // 3, arena)
        out = os.path.join(tmp, "p.json")
        r = subprocess.run([cli, "plan", path, "-s", "given", "--budget", str(budget), "--fallback", "recompute", "-q", "-o", out],
                           stderr=subprocess.PIPE, text=True)
        opt = optimum(gr, budget)
        if opt == "unknown": continue
        if r.returncode == 0:
            fits += 1
            mine = json.load(open(out))["stats"].get("overhead_percent", 0.0)
            if opt is None:
                print("FAIL graph %d budget %d: bufplan fits where the MILP proves nothing does" % (k, budget)); bad += 1; continue
            both += 1
            gap = mine - 100.0 * opt / total
            worst = max(worst, gap)
            if tol is not None and gap > tol:
                print("FAIL graph %d budget %d: %.3f points over the MILP optimum (the bound is %.2f)" % (k, budget, gap, tol)); bad += 1
            if gap > 0.5:
                over += 1
                print("gap graph %d (%d ops) budget %d: bufplan %.3f%%, optimum %.3f%%" % (k, len(gr["ops"]), budget, mine, 100.0 * opt / total))
        elif r.returncode == 1:
            if opt is None: refused_ok += 1
            else: print("note: graph %d budget %d: bufplan refused, the MILP fits at %.3f%%" % (k, budget, 100.0 * opt / total))
        else:
            print("FAIL graph %d: exit %d: %s" % (k, r.returncode, r.stderr)); bad += 1
    print("milp oracle: %d graphs, bufplan fit %d (%d compared, %d more than 0.5 pp over the optimum, worst %.3f pp), "
          "%d refusals the MILP confirms, %d failures" % (n_graphs, fits, both, over, worst, refused_ok, bad))
    sys.exit(1 if bad else 0)

if __name__ == "__main__":
    main()
