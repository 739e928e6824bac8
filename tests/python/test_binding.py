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
import json
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


def skip_graph(n=6, small=4096, big=16384):
    """w -> op0 -> t0 (small) -> grow -> t1 (big) -> Relu ... -> t(n) (big)
    -> shrink -> r (small) -> Add(r, t0) -> y: t0 lives across the big
    chain, so a budget of two big tensors needs t0 evicted and brought back
    (op0 reads a weight, which is there to recompute it from)."""
    g = Graph("skip")
    sh = lambda nb: [1, nb // 4]
    x = g.add_tensor("w", shape=sh(small), dtype="f32")
    g.mark(x, "weight")
    g.add_tensor("t0", shape=sh(small), dtype="f32")
    g.add_op("op0", "Relu", [x], ["t0"], cost=1.0)
    g.add_tensor("t1", shape=sh(big), dtype="f32")
    g.add_op("grow", "Grow", ["t0"], ["t1"], cost=1.0)
    for i in range(2, n + 1):
        g.add_tensor("t%d" % i, shape=sh(big), dtype="f32")
        g.add_op("relu%d" % i, "Relu", ["t%d" % (i - 1)], ["t%d" % i], cost=1.0)
    g.add_tensor("r", shape=sh(small), dtype="f32")
    g.add_op("shrink", "Shrink", ["t%d" % n], ["r"], cost=1.0)
    y = g.add_tensor("y", shape=sh(small), dtype="f32")
    g.add_op("add", "Add", ["r", "t0"], [y], cost=1.0)
    g.mark(y, "output")
    return g.finalize()


def test_new_options(tmp):
    """The options merged after the binding was first written: each one
    reaches the C struct at its own offset and changes what it should."""
    o = bufplan.PlanOptions()
    check(o.fallback == "recompute,offload" and o.host_bandwidth == 16e9 and o.engine is None
          and o.concat_inplace == 0, "defaults from bp_plan_options_init: %r" % o)
    # the cache key's options text is written by C from the struct: every field at its C offset
    g = chain_graph()
    o = bufplan.PlanOptions(budget=1 << 20, fallback="offload", host_bandwidth="2G", concat_inplace=True,
                            engine="strict", threads=3)
    key, err = bufplan.core.L.CacheKey(), bufplan.core.L.Error()
    bufplan.core._check(bufplan.lib().bp_cache_key_make(g.handle, b"", bufplan.core.ctypes.byref(o._c),
                                                        bufplan.core.ctypes.byref(key),
                                                        bufplan.core.ctypes.byref(err)), err)
    text = key.options.decode()
    want = ["budget=1048576", "threads=3", "fallback=2", "host_bandwidth=2147483648", "concat_inplace=1",
            "engine=%016x" % bufplan.Engine.load("strict").digest()]
    for w in want:
        check(w in text, "cache key options %r hold %r" % (text, w))
    # engine: strict has no in-place write; the default writes the chain's Relus in place
    s = skip_graph()
    d = s.plan()
    st = s.plan(engine="strict")
    check(st.verify() and st.engine_name == "strict", "strict plan verifies, names its engine")
    check(any(d.tensor(t)["alias_of"] >= 0 for t in range(s.n_tensors)), "default: some output in place")
    check(all(st.tensor(t)["alias_of"] < 0 for t in range(s.n_tensors)), "strict: nothing in place")
    check(st.arena_bytes > d.arena_bytes, "strict arena %d > default %d" % (st.arena_bytes, d.arena_bytes))
    # an engine as an object, as a dict and as a file: the same profile
    prof = {"format": "bufplan-engine", "version": 1, "name": "relu-only", "ops": {"Relu": {"inplace": [[0, 0]]}}}
    e1 = bufplan.Engine.from_dict(prof)
    path = os.path.join(tmp, "relu.json")
    with open(path, "w") as f:
        f.write(json.dumps(prof))
    e2 = bufplan.Engine.load(path)
    check(e1 == e2 and e1.name == "relu-only" and e1.n_ops == 1, "engine from a dict == from a file")
    p1, p2, p3 = s.plan(engine=e1), s.plan(engine=path), s.plan(engine=prof)
    check(p1.arena_bytes == p2.arena_bytes == p3.arena_bytes and p1.verify(), "one profile, one arena")
    check("strict" in bufplan.Engine.builtins() and "ort-cpu" in bufplan.Engine.builtins(), "built-in names")
    # fallback: under a budget below the peak the plan makes copies, and its stats say what they cost
    peak = st.arena_bytes
    check(peak == 4096 + 2 * 16384, "strict peak: t0 and two big tensors (%d)" % peak)
    for words, kind in (("recompute", "recompute"), ("offload", "prefetch")):
        b = s.plan(engine="strict", budget=peak - 4096, fallback=words, host_bandwidth=1e9)
        cs = b.copies()
        check(b.verify() and b.arena_bytes <= peak - 4096, "%s: arena %d under the budget" % (words, b.arena_bytes))
        check(len(cs) > 0 and all(c["kind"] == kind for c in cs), "%s: copies %r" % (words, cs))
        check(cs and cs[0]["tensor"] == s.find_tensor("t0"), "%s: t0 is evicted" % words)
        ev = {e[0] for e in b.events()}
        sts = b.stats
        if kind == "recompute":
            check(cs[0]["op"] == s.find_op("op0") and sts["recompute_cost"] > 0 and sts["n_recomputes"] == len(cs)
                  and sts["offload_bytes"] == 0 and "recompute" in ev, "recompute stats %r" % sts)
        else:
            check(cs[0]["op"] is None and sts["offload_bytes"] >= 4096 and sts["n_offloads"] == len(cs)
                  and {"offload", "prefetch"} <= ev, "offload stats %r events %r" % (sts, ev))
        check(sts["overhead_percent"] > 0, "%s: overhead %r" % (words, sts["overhead_percent"]))
    none = bufplan.PlanOptions(budget=peak - 4096, fallback="none", engine="strict")
    check(none.fallback == "none", "fallback none reads back")
    raises(BufplanError, ["budget"], s.plan, none)
    # a slower host link makes an offload cost more
    slow = s.plan(engine="strict", budget=peak - 4096, fallback="offload", host_bandwidth=1e3).stats
    fast = s.plan(engine="strict", budget=peak - 4096, fallback="offload", host_bandwidth=1e12).stats
    check(slow["transfer_cost"] >= fast["transfer_cost"], "transfer cost %r >= %r" % (slow["transfer_cost"],
                                                                                      fast["transfer_cost"]))
    # bad words and values: BufplanError / TypeError with bufplan's message
    raises(BufplanError, ["fallback", "recomput"], bufplan.PlanOptions, fallback="recomput")
    raises(BufplanError, ["nonesuch"], bufplan.PlanOptions, engine="nonesuch")
    raises(TypeError, ["engine"], bufplan.PlanOptions, engine=3.5)
    raises(ValueError, ["host_bandwidth"], bufplan.PlanOptions, host_bandwidth=0)
    raises(BufplanError, ["<dict>"], bufplan.Engine.from_dict, {"format": "bufplan-engine", "version": 1,
                                                                "ops": {"Relu": {"inplce": [[0, 0]]}}})


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
        test_new_options(tmp)
        test_bad_input(tmp)
    print("binding: %s (library %s)" % ("FAIL" if FAILS else "ok", bufplan.library_path()))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
