#!/usr/bin/env python3
"""The house rules, checked over the built objects and the sources.

1. Layering: a folder of src/ calls (by symbol, from `nm` over the objects)
   and includes only folders below it in LAYERS; folders on one rank
   (schedule, assign) do not call each other.
2. No file-level cycle: the graph "object A uses a symbol object B defines"
   has no cycle (strongly connected components of one file only).
3. The CLI (tools/) includes only public headers and its own, and calls no
   internal (bp__) symbol.
4. Exports: `nm -D` of the shared library shows exactly the functions that
   include/*.h declares with BP_API.
5. Size: no C file (src/, tools/, tests/, bench/, fuzz/, examples/) over
   MAX_LINES lines unless its first comment says why ("longer than").
Usage: check_layers.py SRC_DIR BUILD_DIR.  Exit 1 with every violation named.
"""
import glob, os, re, subprocess, sys

LAYERS = [["core"], ["graph"], ["onnx"], ["schedule", "assign"], ["plan"],
          ["pool"], ["exec"], ["dyn"], ["viz"]]
RANK = {f: i for i, fs in enumerate(LAYERS) for f in fs}
MAX_LINES = 1200
# Named exceptions: (from folder, to folder, why).  Keep this list short and
# say why in docs/ARCHITECTURE.md.
EXCEPTIONS = []

src, build = sys.argv[1], sys.argv[2]
bad = []


def nm(path, *flags):
    out = subprocess.run(["nm", *flags, path], capture_output=True, text=True, check=True).stdout
    return [l.split() for l in out.splitlines() if l.strip()]


def allowed(a, b):
    if a == b or (a, b) in [(x, y) for x, y, _ in EXCEPTIONS]:
        return True
    return RANK[b] < RANK[a]


# ---- objects of the library: folder/file -> defined and undefined symbols
objdir = os.path.join(build, "CMakeFiles", "bufplan_obj.dir", "src")
# objects whose source still exists (a build folder keeps those of removed files)
objs = sorted(o for o in glob.glob(os.path.join(objdir, "*", "*.o"))
              if os.path.exists(os.path.join(src, "src", os.path.relpath(o, objdir)[:-len(".o")])))
if not objs:
    sys.exit(f"check_layers: no objects under {objdir} (build the library first)")
defs, uses = {}, {}
for o in objs:
    key = os.path.relpath(o, objdir)[:-len(".c.o")]
    defs[key], uses[key] = set(), set()
    for f in nm(o):
        if len(f) == 2 and f[0] == "U":
            uses[key].add(f[1])
        elif len(f) == 3 and f[1] in "TDBRCVW":
            defs[key].add(f[2])
owner = {s: k for k, ss in defs.items() for s in ss}
edges = {k: set() for k in defs}
for k, us in uses.items():
    for s in sorted(us):
        d = owner.get(s)
        if d is None or d == k:
            continue
        edges[k].add(d)
        a, b = k.split("/")[0], d.split("/")[0]
        if a not in RANK or b not in RANK:
            bad.append(f"{k}: folder not in the layer list ({a} or {b})")
        elif not allowed(a, b):
            bad.append(f"upward call: src/{k}.c calls {s} (src/{d}.c): {a} may not call {b}")

# ---- file-level cycles (Tarjan's SCC, iterative)
index, low, onstack, stack, comps, counter = {}, {}, set(), [], [], [0]
for root in sorted(edges):
    if root in index:
        continue
    work = [(root, iter(sorted(edges[root])))]
    index[root] = low[root] = counter[0]; counter[0] += 1
    stack.append(root); onstack.add(root)
    while work:
        v, it = work[-1]
        w = next(it, None)
        if w is None:
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop(); onstack.discard(x); comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
        elif w not in index:
            index[w] = low[w] = counter[0]; counter[0] += 1
            stack.append(w); onstack.add(w)
            work.append((w, iter(sorted(edges[w]))))
        elif w in onstack:
            low[v] = min(low[v], index[w])
for c in comps:
    detail = "; ".join(f"{a} -> {b}" for a in c for b in sorted(edges[a]) if b in c)
    bad.append(f"file-level cycle: {', '.join(c)} ({detail})")

# ---- includes: "folder/header.h" only from the same folder or below
inc_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
for path in sorted(glob.glob(os.path.join(src, "src", "*", "*.[ch]"))):
    folder = os.path.basename(os.path.dirname(path))
    for m in inc_re.finditer(open(path, encoding="utf-8").read()):
        inc = m.group(1)
        if inc.startswith("bufplan") or "/" not in inc:
            if "/" not in inc and not inc.startswith("bufplan") and not inc.endswith(".pb-c.h"):
                bad.append(f"{os.path.relpath(path, src)}: #include \"{inc}\" does not name its folder")
            continue
        tf = inc.split("/")[0]
        if tf not in RANK:
            bad.append(f"{os.path.relpath(path, src)}: #include \"{inc}\": no such folder")
        elif not allowed(folder, tf):
            bad.append(f"{os.path.relpath(path, src)}: includes \"{inc}\": {folder} may not include {tf}")

# ---- the CLI: public API only
for path in sorted(glob.glob(os.path.join(src, "tools", "*.[ch]"))):
    for m in inc_re.finditer(open(path, encoding="utf-8").read()):
        inc = m.group(1)
        if not (inc.startswith("bufplan") or os.path.exists(os.path.join(src, "tools", inc))):
            bad.append(f"{os.path.relpath(path, src)}: the CLI includes \"{inc}\" (public headers only)")
cli_objs = glob.glob(os.path.join(build, "CMakeFiles", "bufplan_cli.dir", "tools", "*.o"))
for o in sorted(cli_objs):
    for f in nm(o):
        if len(f) == 2 and f[0] == "U" and f[1].startswith("bp__"):
            bad.append(f"{os.path.relpath(o, build)}: the CLI calls internal {f[1]}")

# ---- exports
declared = set()
for h in glob.glob(os.path.join(src, "include", "*.h")):
    for m in re.finditer(r"^BP_API\b[^(;]*?\b(bp_[a-z0-9_]+)\s*\(", open(h, encoding="utf-8").read(), re.M):
        declared.add(m.group(1))
so = os.path.join(build, "libbufplan.so")
if os.path.exists(so):
    exported = {f[2] for f in nm(so, "-D", "--defined-only") if len(f) == 3}
    exported -= {"_init", "_fini", "__bss_start", "_edata", "_end"}
    for s in sorted(exported - declared):
        bad.append(f"libbufplan.so exports {s}, which include/ does not declare with BP_API")
    for s in sorted(declared - exported):
        bad.append(f"include/ declares {s} with BP_API, but libbufplan.so does not export it")
else:
    bad.append(f"no {so}")

# ---- file sizes
sized = [os.path.join(src, "src", "*", "*.[ch]")] + [os.path.join(src, d, "**", "*.[ch]") for d in ("tools", "tests", "bench", "fuzz", "examples")]
for path in sorted({f for pat in sized for f in glob.glob(pat, recursive=True)}):
    text = open(path, encoding="utf-8").read()
    n = text.count("\n")
    opener = text[:text.find("*/")] if "*/" in text else ""
    if n > MAX_LINES and "longer than" not in opener:
        bad.append(f"{os.path.relpath(path, src)}: {n} lines (over {MAX_LINES}, and its opener does not say why)")

for b in bad:
    print("FAIL:", b)
print(f"house: {len(objs)} objects, {sum(len(e) for e in edges.values())} file edges, "
      f"{len(declared)} public functions, {len(bad)} violations")
sys.exit(1 if bad else 0)
