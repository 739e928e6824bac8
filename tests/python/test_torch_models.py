"""bufplan.torch on the bench models: each compiled in inference and for one
training step, run once with the debug checks on (the arena filled with NaN,
every live tensor compared with an eager run after every op), and the
output, the loss, every gradient and every buffer compared bit for bit with
eager.  Arguments: model names (resnet18 mobilenet_v2 efficientnet_b0
vit_b_16 transformer); --full runs them at the bench size (224, batch 2;
transformer 4 layers, seq 128) without the per-op checks."""
import sys
import time

from torch_util import bt, check, finish, identical_run, model


def main(argv):
    full = "--full" in argv
    names = [a for a in argv if not a.startswith("--")]
    for name in names:
        for mode in ("infer", "train"):
            m, x = model(name, small=not full)
            t = time.perf_counter()
            f, ok = identical_run(m, x, mode, debug=not full)
            r = f.report()
            check(r["arena_bytes"] <= r["traced_peak_bytes"] or mode == "infer",
                  "%s %s: arena %d above the traced order's peak %d" % (name, mode, r["arena_bytes"],
                                                                         r["traced_peak_bytes"]))
            check(r["engine"] == "torch-aten" and f.entry(f.example).plan.verify(),
                  "%s %s: the plan is made for, and verifies against, the torch profile (%s)" % (name, mode, r["engine"]))
            st = bt.allocator.stats() if bt.allocator_available() else {}
            print("%-16s %-5s %s  arena %10d  traced peak %10d  eager live peak %s  %.1f s" % (
                name, mode, "identical" if ok else "DIFFERS", r["arena_bytes"], r["traced_peak_bytes"],
                r["eager_live_peak_bytes"], time.perf_counter() - t), flush=True)
            check(st.get("mismatches", 0) == 0, "%s %s: allocations differed from the calibration" % (name, mode))
    return finish("torch models " + " ".join(names))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
