"""bufplan.torch beyond bit-identity: the debug mode catches a plan with one
offset moved onto a live tensor at that very step; RNG order (dropout in
training, planned with schedulers that reorder the graph) gives eager's
numbers; two threads run one compiled model at once; bad input raises a clear
exception; a new input shape gets a plan of its own and the plan cache hits
on the second compile; the out= fallback (no planned allocator) is
bit-identical too and says what it costs."""
import copy
import os
import subprocess
import sys
import tempfile
import threading

from torch_util import bt, check, finish, identical_run, model, torch
import bufplan  # noqa: E402  (torch_util put the package on the path)


def first_line(e):
    return str(e).splitlines()[0]


def test_debug_catches_moved_offset():
    m, x = model("resnet18")
    m.eval()
    f = bt.compile(m, (x,), debug=True)
    e = f.entry((x,))
    r = e.runner
    with torch.no_grad():
        want = copy.deepcopy(m)(x)
    check(torch.equal(f(x), want), "debug run of the unchanged plan is identical")
    # a tensor X made at step s, moved onto a tensor Y live across s (made before, read after)
    tp = r.tp
    for op_step, op in enumerate(r.order):
        xs = [t for t in op.fresh if tp[t][2] is not None and r.prog.nbytes[t] > 0]
        if not xs:
            continue
        X = xs[0]
        ys = [t for t in range(len(tp)) if tp[t][2] is not None and tp[t][0] < op_step < tp[t][1]
              and r.prog.nbytes[t] >= r.prog.nbytes[X] and r.prog.view_of[t] < 0 and t not in op.outs]
        if op_step > 3 and ys:
            break
    else:
        check(False, "no tensor to move")
        return
    Y = ys[0]
    r.set_offset(X, r.offset[Y])
    try:
        f(x)
        check(False, "the moved offset was not caught")
    except bt.DebugMismatch as err:
        msg = str(err)
        check(("after step %d " % op_step) in msg, "caught at step %d: %s" % (op_step, first_line(err)))
        check(r.prog.names[Y] in msg.splitlines()[0], "names the overwritten tensor %s: %s" % (r.prog.names[Y],
                                                                                           first_line(err)))
        check("offset %d" % r.offset[Y] in msg and "buffer history" in msg and r.prog.names[X] in msg,
              "gives the offset and the buffer history: %s" % msg[:600])


class TwoDropouts(torch.nn.Module):
    """Two branches, each with a dropout: a scheduler may run them in either order."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(32, 64)
        self.b = torch.nn.Linear(32, 64)
        self.c = torch.nn.Linear(64, 8)
        self.d1 = torch.nn.Dropout(0.5)
        self.d2 = torch.nn.Dropout(0.3)

    def forward(self, x):
        u = self.d1(torch.relu(self.a(x)))
        v = self.d2(torch.tanh(self.b(x)))
        return self.c(u * 2 + v)


def test_rng_order():
    torch.manual_seed(0)
    m, x = TwoDropouts(), torch.randn(16, 32)
    reordered = 0
    for sched in ("dfs", "lpmf", "kahn", "list", "best"):
        f, ok = identical_run(copy.deepcopy(m), x, "train", debug=False, options={"sched": sched})
        e = f.entry((x,))
        traced = [op.id for op in e.prog.ops]
        order = e.plan.schedule
        if order != traced:
            reordered += 1
        rng = [op.id for op in e.prog.ops if "dropout" in str(op.node.target) or "bernoulli" in str(op.node.target)]
        pos = [order.index(i) for i in rng]
        check(len(rng) >= 2 and pos == sorted(pos), "%s: the random ops keep their traced order (%s)" % (sched, pos))
        check(ok, "%s: dropout in training identical to eager" % sched)
    check(reordered > 0, "some scheduler reorders the traced graph (else the test proves nothing)")


def test_two_threads():
    m, x = model("resnet18")
    m.eval()
    with torch.no_grad():
        want = m(x)
    f = bt.compile(m, (x,))
    results, errors = [], []

    def work():
        try:
            for _ in range(4):
                results.append(torch.equal(f(x), want))
        except Exception as e:  # reported below
            errors.append(repr(e))

    ts = [threading.Thread(target=work) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(not errors and len(results) == 8 and all(results), "two threads: %s %s" % (results, errors))


def expect(exc, words, fn, *a, **kw):
    try:
        fn(*a, **kw)
    except exc as e:
        check(all(w in str(e) for w in words), "%s: message %r lacks %r" % (exc.__name__, str(e), words))
        return
    except Exception as e:
        check(False, "raised %s (%s), expected %s" % (type(e).__name__, e, exc.__name__))
        return
    check(False, "did not raise %s (%s)" % (exc.__name__, words))


def test_bad_input_and_shapes(tmp):
    m, x = model("transformer")
    expect(TypeError, ["torch.nn.Module"], bt.compile, "resnet", (x,))
    expect(TypeError, ["example input 0", "str"], bt.compile, m, ("x",))
    expect(TypeError, ["example_inputs"], bt.compile, m, 5)
    expect(ValueError, ["mode", "fly"], bt.compile, m, (x,), mode="fly")
    expect(TypeError, ["loss must be callable"], bt.compile, m, (x,), mode="train", loss=3)
    expect(TypeError, ["unknown plan option"], bt.compile, m, (x,), options={"schedule": "best"})
    f = bt.compile(m, (x,), cache_dir=os.path.join(tmp, "cache"))
    expect(ValueError, ["input 0", "dtype"], f, x.double())
    expect(ValueError, ["input 0", "rank"], f, x[0])
    expect(TypeError, ["called with 2 inputs"], f, x, x)
    expect(TypeError, ["input 0 is a str"], f, "x")
    # another sequence length: its own plan, still identical to eager
    y = torch.randn(1, 48, x.shape[2])
    with torch.no_grad():
        check(torch.equal(f(y), m(y)) and torch.equal(f(x), m(x)), "a second shape runs identically")
    check(len(f._entries) == 2, "two shapes, two plans (%d)" % len(f._entries))
    g = bt.compile(m, (x,), cache_dir=os.path.join(tmp, "cache"))
    check(g.report()["cache_hit"], "the second compile finds the plan in the plan cache")
    # a model that does not trace: the error says which input
    class Bad(torch.nn.Module):
        def forward(self, x):
            return x.reshape(7, -1)
    expect(RuntimeError, ["shape"], bt.compile, Bad(), (torch.randn(4, 4),))


def test_fallback():
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from torch_util import *\n"
            "m, x = model('resnet18'); f, ok = identical_run(m, x, 'train', debug=True)\n"
            "r = f.report(); st = f.entry((x,)).runner.fallback_stats\n"
            "print('ALLOCATOR', r['allocator'], r['allocator_why']); print('STATS', st)\n"
            "sys.exit(0 if ok and not r['allocator'] and st['out_variant_ops'] > 0 and st['copied_bytes'] > 0 else 1)\n"
            % os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, BUFPLAN_TORCH_NO_ALLOCATOR="1")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0 and "BUFPLAN_TORCH_NO_ALLOCATOR" in p.stdout,
          "the out= fallback: rc %d %s %s" % (p.returncode, p.stdout[-800:], p.stderr[-800:]))
    print(p.stdout.strip())


class Skip(torch.nn.Module):
    """sin(w) is read first and last, around a chain four times its size:
    under a budget it is dropped and computed again before the last read."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(1024))

    def forward(self, x):
        t0 = torch.sin(self.w)
        t = x + t0
        for _ in range(4):
            t = torch.cos(t)
        return torch.cat([t0, t.sum().reshape(1)])


def skip_model():
    torch.manual_seed(0)
    return Skip(), torch.randn(4, 1024)


def test_budget():
    """compile(budget=B) below the plain plan's arena: the plan holds copies
    (recompute or offload), the arena fits B, and the replayed run is bit
    identical to eager.  The budget is the smallest of a few fractions of the
    arena that the planner fits (a training graph's gradients stay in the
    arena to the end, which bounds how far below it can go)."""
    for name, small, fb in (("transformer", True, "recompute,offload"), ("resnet18", False, "recompute,offload"),
                            ("skip", True, "recompute")):
        m, x = model(name, small=small) if name != "skip" else skip_model()
        f = bt.compile(m, (x,), mode="infer" if name == "skip" else "train")
        e = f.entry((x,))
        a, g = e.plan.arena_bytes, e.prog.graph
        budget = None
        for frac in (0.8, 0.9, 0.95, 0.98, 0.99, 0.995):
            try:
                q = g.plan(sched="best", assign="bestfit", time_limit=2, engine=e.engine, budget=int(a * frac),
                           fallback=fb)
            except bufplan.BufplanError as err:
                check("budget" in str(err), "%s: a refused budget says so: %s" % (name, first_line(err)))
                continue
            if q.copies():
                budget = int(a * frac)
                break
        if not check(budget is not None, "%s: no budget below the arena %d gives a plan with copies" % (name, a)):
            continue
        mode = "infer" if name == "skip" else "train"
        m, x = model(name, small=small) if name != "skip" else skip_model()
        f2, ok = identical_run(m, x, mode, debug=False, budget=budget, options={"fallback": fb})
        p = f2.entry((x,)).plan
        kinds = sorted({c["kind"] for c in p.copies()})
        check(p.copies() and p.arena_bytes <= budget and p.verify(),
              "%s: the budgeted plan: %d copies, arena %d, budget %d" % (name, len(p.copies()), p.arena_bytes, budget))
        check(ok, "%s: the run with %s copies differs from eager" % (name, kinds))
        st = bt.allocator.stats()
        check(st.get("mismatches", 0) == 0, "%s: allocations differed from the calibration" % name)
        check(fb != "recompute" or kinds == ["recompute"], "%s: recompute only, copies %s" % (name, kinds))
        print("budget %-11s arena %d -> budget %d (%.1f%%): plan %d, %d copies %s, overhead %.2f%%, %s" % (
            name, a, budget, 100.0 * budget / a, p.arena_bytes, len(p.copies()), kinds,
            p.stats["overhead_percent"], "identical" if ok else "DIFFERS"), flush=True)


def main(argv):
    if not bt.allocator_available():
        print("NOTE: the planned allocator is not available (%s); the runner uses the out= fallback"
              % bt.allocator.why())
    with tempfile.TemporaryDirectory() as tmp:
        tests = {"debug": test_debug_catches_moved_offset, "rng": test_rng_order, "threads": test_two_threads,
                 "input": lambda: test_bad_input_and_shapes(tmp), "fallback": test_fallback,
                 "budget": test_budget}
        for name in argv or list(tests):
            tests[name]()
            print("checked:", name, flush=True)
    return finish("torch checks")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
