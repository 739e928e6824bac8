"""bufplan.torch on real models: resnet18, mobilenet_v2, efficientnet_b0,
vit_b_16 (image 224, batch 2) and a 4-layer transformer encoder (seq 128,
batch 2), in inference and for one training step.  For each: whether the
outputs (training: the loss, every gradient and every buffer) are
bit-identical to eager; the arena; the memory outside it in steady state
(bytes the ops allocated outside the arena, and the peak of everything live
outside it above the run's start, outputs left in the arena); eager's peak
(live bytes and as malloc rounds them); the traced order's peak and the
plan's lower bound; wall time of the planned run and of eager, their
ratio, the ratio of their CPU times, and the load average;
then the plan-cache hit on resnet18.  Times: the best of --repeat runs of
each, eager and planned in turn (BP_TORCH_THREADS intra-op threads,
default 2; with 1, the CPU time ratio holds on a loaded machine).  Markdown on stdout.

usage: python3 bench/torch/torch_models.py [--quick] [--repeat N] [MODEL...]
--quick: 64x64 images and seq 32 (minutes less; not the table's numbers)."""
import copy
import os
import statistics
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
sys.path.insert(0, os.path.join(here, "..", "..", "tests", "python"))
import torch  # noqa: E402

import bufplan  # noqa: E402
import bufplan.torch as bt  # noqa: E402
from torch_util import Encoder  # noqa: E402

MODELS = ["resnet18", "mobilenet_v2", "efficientnet_b0", "vit_b_16", "transformer"]


def make(name, quick):
    import torchvision.models as tm
    torch.manual_seed(0)
    if name == "transformer":
        return Encoder(), torch.randn(2, 32 if quick else 128, 256)
    img = 64 if quick else 224
    m = tm.vit_b_16(image_size=img) if name == "vit_b_16" else getattr(tm, name)()
    return m, torch.randn(2, 3, img, img)


def mib(b):
    return "-" if b is None else "%.2f MiB" % (b / 2**20)


def median_time(fn, n):
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def interleaved_best(fa, fb, n):
    """The best of n runs of fa and of fb, taken in turn (a shared machine's
    load hits both alike; the best run is the one least disturbed): wall
    times (a, b), then the process's CPU times (a, b), which waiting for the
    cores does not inflate."""
    ta, tb, ca, cb = [], [], [], []
    for _ in range(n):
        for fn, ts, cs in ((fa, ta, ca), (fb, tb, cb)):
            c, t = time.process_time(), time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
            cs.append(time.process_time() - c)
    return min(ta), min(tb), min(ca), min(cb)


def identical(m, ref, x, f, mode):
    torch.manual_seed(1)
    if mode == "infer":
        with torch.no_grad():
            want = ref(x)
        torch.manual_seed(1)
        return torch.equal(f(x), want)
    want = ref(x).sum()
    want.backward()
    torch.manual_seed(1)
    got = f(x)
    ok = torch.equal(got, want)
    ok &= all(torch.equal(p.grad, q.grad) for p, q in zip(m.parameters(), ref.parameters()))
    ok &= all(torch.equal(b, c) for b, c in zip(m.buffers(), ref.buffers()))
    return ok


def run(name, mode, quick, repeat):
    m, x = make(name, quick)
    m.train(mode == "train")
    ref = copy.deepcopy(m)
    f = bt.compile(m, (x,), mode=mode)
    same = identical(m, ref, x, f, mode)
    rep = f.report()
    # steady state: one more run of the planned program, its outputs left in
    # the arena (the gradients are not copied out to .grad)
    e = f.entry((x,))
    e.runner.clone_outputs = False
    vals = bt._placeholders(e.cap, m, (x,))
    e.runner.run(vals)
    s0 = bt.allocator.stats()
    bt.allocator.reset_peak()
    e.runner.run(vals)
    s1 = bt.allocator.stats()
    e.runner.clone_outputs = True
    del vals
    outside_ops = s1["outside_bytes"] - s0["outside_bytes"]
    outside_peak = s1["peak"] - s0["live"]
    if mode == "train":
        for p in m.parameters():
            p.grad = None   # the next runs allocate no gradient accumulators either side

        def eager():
            ref.zero_grad(set_to_none=True)
            ref(x).sum().backward()

        def planned():
            m.zero_grad(set_to_none=True)
            f(x)
    else:
        def eager():
            with torch.no_grad():
                ref(x)

        def planned():
            f(x)
    eager()
    planned()
    te, tp, ce, cp = interleaved_best(eager, planned, repeat)
    return {"name": name, "mode": mode, "same": same, "rep": rep, "outside_ops": outside_ops,
            "outside_peak": outside_peak, "te": te, "tp": tp, "ce": ce, "cp": cp, "load": os.getloadavg()[0],
            "mismatches": s1["mismatches"]}


def cache_hit(quick):
    m, x = make("resnet18", quick)
    m.eval()
    with tempfile.TemporaryDirectory() as d:
        f = bt.compile(m, (x,), cache_dir=d)
        e = f.entry((x,))
        cache = bufplan.PlanCache(d)
        opts = bufplan.PlanOptions(sched="best", assign="bestfit", time_limit=10, engine=e.engine)
        if cache.get(e.prog.graph, "", opts) is None:
            raise SystemExit("bench: the plan cache missed the plan compile() stored")
        disk = median_time(lambda: cache.get(e.prog.graph, "", opts), 20)
        cache.close()
        cache = bufplan.PlanCache(d, verify=False)
        disk_nv = median_time(lambda: cache.get(e.prog.graph, "", opts), 20)
        mem = median_time(lambda: f.entry((x,)), 1000)
        first = median_time(lambda: f(x), 5)
    return disk, disk_nv, mem, first, e.prog.graph.n_ops


def main(argv):
    quick = "--quick" in argv
    repeat = 5
    if "--repeat" in argv:
        repeat = int(argv[argv.index("--repeat") + 1])
    names = [a for a in argv if a in MODELS] or MODELS
    torch.set_num_threads(int(os.environ.get("BP_TORCH_THREADS", "2")))
    print("bufplan.torch, %s; torch %s, %d threads, allocator %s; %s" % (
        "quick (64x64, seq 32)" if quick else "image 224 / seq 128, batch 2", torch.__version__,
        torch.get_num_threads(), "planned" if bt.allocator_available() else "none: " + bt.allocator.why(),
        time.strftime("%Y-%m-%d")))
    print()
    print("| model | mode | bit-identical | arena | outside (ops / peak) | eager peak live / malloc | traced peak "
          "| arena vs traced | lower bound | planned ms | eager ms | time ratio | CPU time ratio | load |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        for mode in ("infer", "train"):
            r = run(name, mode, quick, repeat)
            rep = r["rep"]
            gain = 100.0 * (rep["traced_peak_bytes"] - rep["arena_bytes"]) / rep["traced_peak_bytes"]
            print("| %s | %s | %s | %s | %d B / %d B | %s / %s | %s | %+.1f%% | %s | %.1f | %.1f | %.2f | %.3f | %.1f |" % (
                name, mode, "yes" if r["same"] else "NO", mib(rep["arena_bytes"]), r["outside_ops"],
                r["outside_peak"], mib(rep["eager_live_peak_bytes"]), mib(rep["eager_allocator_peak_bytes"]),
                mib(rep["traced_peak_bytes"]), -gain, mib(rep["lower_bound_bytes"]), 1e3 * r["tp"], 1e3 * r["te"],
                r["tp"] / r["te"], r["cp"] / r["ce"], r["load"]), flush=True)
    disk, disk_nv, mem, first, n_ops = cache_hit(quick)
    print()
    print("Plan-cache hit, resnet18 inference (%d ops): bufplan's plan cache on disk %.3f ms (verified), %.3f ms "
          "(unverified); a shape already planned in this process %.4f ms; a whole cached run %.1f ms."
          % (n_ops, 1e3 * disk, 1e3 * disk_nv, 1e3 * mem, 1e3 * first))


if __name__ == "__main__":
    main(sys.argv[1:])
