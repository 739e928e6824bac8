"""The Python face of the C API: Graph (built through the builder calls, or
read from JSON / ONNX), PlanOptions (every field of bp_plan_options), Plan
(schedule, per-tensor placement, events, stats, JSON and CSV, verify, viz),
pack (the interval assigner), PlanCache (the on-disk plan cache).

Every C call that fails raises BufplanError carrying bufplan's own message and
status.  Arguments are checked here first (a wrong type is a TypeError, a freed
object a BufplanError), so nothing reaches C that could crash it.  Objects own
their C handle and free it once (free() or garbage collection); a plan keeps
its graph alive.
"""
import ctypes
import threading

from . import _lib as L

_lib = None
_lib_lock = threading.Lock()


def lib():
    """The loaded library (loaded on first use)."""
    global _lib
    with _lib_lock:
        if _lib is None:
            _lib = L.load()
        return _lib


class BufplanError(Exception):
    """A bufplan call failed: .status is the status name ("invalid input",
    ...), .code the bp_status number, str() bufplan's message."""

    def __init__(self, code, message):
        self.code = code
        self.status = lib().bp_status_str(code).decode() if code else "ok"
        self.message = message
        super().__init__(message)


STATUS = ["ok", "nomem", "invalid", "io", "usage", "budget", "verify", "unsupported", "limit",
          "exhausted", "kernel", "timeout"]
TENSOR_INPUT, TENSOR_WEIGHT, TENSOR_OUTPUT, TENSOR_CONST = 1, 2, 4, 8
DIM_SYMBOLIC = -(1 << 63)
NO_OFFSET = (1 << 64) - 1
KINDS = ["planned", "input", "weight", "output", "dynamic", "workspace"]
EVENTS = ["alloc", "exec", "free", "recompute", "offload", "prefetch"]
COPY_KINDS = ["recompute", "prefetch"]


def _check(status, err):
    if status != 0:
        raise BufplanError(status, err.msg.decode(errors="replace") or lib().bp_status_str(status).decode())


def _str(x, what):
    if isinstance(x, str):
        return x.encode()
    if isinstance(x, bytes):
        return x
    raise TypeError("bufplan: %s must be a str, not %s" % (what, type(x).__name__))


def _int(x, what, lo=None, hi=None):
    if isinstance(x, bool) or not isinstance(x, int):
        try:
            import numbers
            if isinstance(x, numbers.Integral) and not isinstance(x, bool):
                x = int(x)
            else:
                raise TypeError
        except TypeError:
            raise TypeError("bufplan: %s must be an int, not %s" % (what, type(x).__name__)) from None
    if (lo is not None and x < lo) or (hi is not None and x > hi):
        raise ValueError("bufplan: %s = %d is out of range [%s, %s]" % (what, x, lo, hi))
    return x


def version():
    """The library's version string."""
    return lib().bp_version().decode()


def parse_bytes(s):
    """"4K", "1.5M", "2GiB" -> bytes (ValueError when not a byte count)."""
    out = ctypes.c_uint64()
    if not lib().bp_parse_bytes(_str(s, "byte count"), ctypes.byref(out)):
        raise ValueError("bufplan: %r is not a byte count" % (s,))
    return out.value


def dtype_parse(s):
    """"f32", "float32", ... -> the bp_dtype number (ValueError when unknown)."""
    d = lib().bp_dtype_parse(_str(s, "dtype"))
    if d == 0:
        raise ValueError("bufplan: unknown dtype %r" % (s,))
    return d


def dtype_name(d):
    return lib().bp_dtype_name(_int(d, "dtype")).decode()


class _Owned:
    """A C object this process owns: freed once, by free() or garbage
    collection; any use after that raises BufplanError naming what it was."""
    _free_fn = None      # name of the C function that frees the handle
    _what = "object"

    def free(self):
        """Frees the C object now; every later use raises BufplanError."""
        h, self._h = getattr(self, "_h", None), None
        if h:
            getattr(lib(), self._free_fn)(h)

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass

    @property
    def handle(self):
        if not getattr(self, "_h", None):
            raise BufplanError(4, "bufplan: the %s has been freed" % self._what)
        return self._h


# ------------------------------------------------------------------ graph

class Graph(_Owned):
    """A bufplan graph.  Build it with add_tensor / add_op / mark / ...,
    then finalize(); or Graph.read(path), Graph.parse_json(text), Graph.gen(kind)."""

    def __init__(self, name="graph", _handle=None):
        self._h = _handle if _handle is not None else lib().bp_graph_new(_str(name, "graph name"), None)
        if not self._h:
            raise MemoryError("bufplan: out of memory creating a graph")
        self._lock = threading.Lock()
        self._finalized = _handle is not None

    _free_fn, _what = "bp_graph_free", "graph"

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.free()

    # -- readers and generators
    @classmethod
    def read(cls, path):
        """A JSON graph or an ONNX model (chosen by content)."""
        h, err = ctypes.c_void_p(), L.Error()
        _check(lib().bp_graph_read(_str(str(path), "path"), None, ctypes.byref(h), ctypes.byref(err)), err)
        return cls(_handle=h.value)

    @classmethod
    def parse_json(cls, text, filename="<string>"):
        b = _str(text, "JSON text")
        h, err = ctypes.c_void_p(), L.Error()
        _check(lib().bp_graph_parse_json(b, len(b), _str(filename, "filename"), None, ctypes.byref(h),
                                         ctypes.byref(err)), err)
        return cls(_handle=h.value)

    @classmethod
    def gen(cls, kind, seed=1, layers=0, width=0, nodes=0, seq=0, batch=0, training=False, symbolic_seq=False):
        """A generated graph (bufplan gen): chain, diamond, resnet50, unet, transformer, randwire."""
        opts = (ctypes.c_int * 12)()
        o = ctypes.cast(opts, ctypes.POINTER(ctypes.c_uint64))
        o[0] = _int(seed, "seed", 0)
        ints = ctypes.cast(ctypes.addressof(opts) + 8, ctypes.POINTER(ctypes.c_int))
        for i, (v, n) in enumerate([(layers, "layers"), (width, "width"), (nodes, "nodes"), (seq, "seq"),
                                    (batch, "batch"), (int(bool(training)), "training"),
                                    (int(bool(symbolic_seq)), "symbolic_seq")]):
            ints[i] = _int(v, n, 0, 1 << 30)
        h, err = ctypes.c_void_p(), L.Error()
        _check(lib().bp_gen(_str(kind, "generator kind"), opts, None, ctypes.byref(h), ctypes.byref(err)), err)
        return cls(_handle=h.value)

    # -- building
    def add_tensor(self, name, nbytes=None, shape=None, dtype=None):
        """Adds a tensor: by byte size (nbytes), or by shape and dtype (a
        dimension may be a str: a symbol).  Returns its id."""
        tid, err = ctypes.c_int32(), L.Error()
        n = _str(name, "tensor name")
        self._finalized = False
        if shape is None:
            if nbytes is None:
                raise TypeError("bufplan: add_tensor(%r) needs nbytes or shape and dtype" % (name,))
            _check(lib().bp_graph_add_tensor(self.handle, n, _int(nbytes, "nbytes", 0, (1 << 64) - 1),
                                             ctypes.byref(tid), ctypes.byref(err)), err)
        else:
            if nbytes is not None:
                raise TypeError("bufplan: add_tensor(%r): give nbytes or shape, not both" % (name,))
            if not isinstance(shape, (list, tuple)):
                raise TypeError("bufplan: shape of %r must be a list or tuple, not %s" % (name, type(shape).__name__))
            if len(shape) > 64:
                raise ValueError("bufplan: shape of %r has rank %d (at most 64)" % (name, len(shape)))
            dims = (ctypes.c_int64 * max(1, len(shape)))()
            syms = (ctypes.c_char_p * max(1, len(shape)))()
            for i, d in enumerate(shape):
                if isinstance(d, str):
                    dims[i], syms[i] = DIM_SYMBOLIC, d.encode()
                else:
                    dims[i] = _int(d, "dimension %d of %s" % (i, name), -(1 << 63) + 1, (1 << 63) - 1)
            dt = dtype_parse(dtype) if isinstance(dtype, str) else _int(dtype, "dtype", 1, 63)
            _check(lib().bp_graph_add_tensor_shape(self.handle, n, dt, len(shape), dims, syms, ctypes.byref(tid),
                                                   ctypes.byref(err)), err)
        self._finalized = False
        return tid.value

    def _tensor(self, t, what="tensor"):
        if isinstance(t, str):
            i = lib().bp_graph_find_tensor(self.handle, t.encode())
            if i < 0:
                raise BufplanError(4, "%s: no tensor named \"%s\"" % (self.name, t))
            return i
        return _int(t, what, 0, 2 ** 31 - 1)

    def _op(self, o):
        if isinstance(o, str):
            i = lib().bp_graph_find_op(self.handle, o.encode())
            if i < 0:
                raise BufplanError(4, "%s: no op named \"%s\"" % (self.name, o))
            return i
        return _int(o, "op", 0, 2 ** 31 - 1)

    def add_op(self, name, type, inputs, outputs, cost=0.0):
        """Adds an op reading `inputs` and writing `outputs` (tensor ids or
        names).  Returns its id."""
        if not isinstance(inputs, (list, tuple)) or not isinstance(outputs, (list, tuple)):
            raise TypeError("bufplan: add_op(%r): inputs and outputs must be lists" % (name,))
        ins = (ctypes.c_int32 * max(1, len(inputs)))(*[self._tensor(t, "input") for t in inputs])
        outs = (ctypes.c_int32 * max(1, len(outputs)))(*[self._tensor(t, "output") for t in outputs])
        if not isinstance(cost, (int, float)):
            raise TypeError("bufplan: cost must be a number, not %s" % type(cost).__name__)
        oid, err = ctypes.c_int32(), L.Error()
        self._finalized = False
        _check(lib().bp_graph_add_op(self.handle, _str(name, "op name"), _str(type, "op type"), len(inputs), ins,
                                     len(outputs), outs, float(cost), ctypes.byref(oid), ctypes.byref(err)), err)
        self._finalized = False
        return oid.value

    def set_view(self, tensor, source):
        err = L.Error()
        self._finalized = False
        _check(lib().bp_graph_set_view(self.handle, self._tensor(tensor), self._tensor(source), ctypes.byref(err)), err)
        self._finalized = False

    def set_inplace(self, op, out, inp):
        err = L.Error()
        self._finalized = False
        _check(lib().bp_graph_set_inplace(self.handle, self._op(op), self._tensor(out), self._tensor(inp),
                                          ctypes.byref(err)), err)
        self._finalized = False

    def mark(self, tensor, flags):
        """Role flags: TENSOR_INPUT, TENSOR_WEIGHT, TENSOR_OUTPUT (or "input", "weight", "output")."""
        if isinstance(flags, str):
            flags = {"input": TENSOR_INPUT, "weight": TENSOR_WEIGHT, "output": TENSOR_OUTPUT,
                     "const": TENSOR_CONST}.get(flags)
            if flags is None:
                raise ValueError("bufplan: mark: the role must be input, weight, output or const")
        err = L.Error()
        self._finalized = False
        _check(lib().bp_graph_mark(self.handle, self._tensor(tensor), _int(flags, "flags", 0, 15),
                                   ctypes.byref(err)), err)
        self._finalized = False

    def append_backward(self):
        err = L.Error()
        _check(lib().bp_graph_append_backward(self.handle, ctypes.byref(err)), err)
        self._finalized = True

    def bind_dim(self, sym, value):
        err = L.Error()
        _check(lib().bp_graph_bind_dim(self.handle, _str(sym, "symbol"), _int(value, "value"), ctypes.byref(err)), err)

    def finalize(self):
        err = L.Error()
        _check(lib().bp_graph_finalize(self.handle, ctypes.byref(err)), err)
        self._finalized = True
        return self

    def _ready(self):
        if not self._finalized:
            self.finalize()
        return self.handle

    # -- queries
    @property
    def name(self):
        return lib().bp_graph_name(self.handle).decode()

    @property
    def n_tensors(self):
        return lib().bp_graph_n_tensors(self.handle)

    @property
    def n_ops(self):
        return lib().bp_graph_n_ops(self.handle)

    def find_tensor(self, name):
        return lib().bp_graph_find_tensor(self.handle, _str(name, "tensor name"))

    def find_op(self, name):
        return lib().bp_graph_find_op(self.handle, _str(name, "op name"))

    def _tid(self, t):
        t = self._tensor(t)
        if t >= self.n_tensors:
            raise IndexError("bufplan: %s: tensor id %d out of range (%d tensors)" % (self.name, t, self.n_tensors))
        return t

    def _oid(self, o):
        o = self._op(o)
        if o >= self.n_ops:
            raise IndexError("bufplan: %s: op id %d out of range (%d ops)" % (self.name, o, self.n_ops))
        return o

    def tensor_name(self, t):
        return lib().bp_graph_tensor_name(self.handle, self._tid(t)).decode()

    def tensor_bytes(self, t):
        return lib().bp_graph_tensor_bytes(self.handle, self._tid(t))

    def tensor_flags(self, t):
        return lib().bp_graph_tensor_flags(self.handle, self._tid(t))

    def tensor_shape(self, t):
        dims = (ctypes.c_int64 * 64)()
        r = lib().bp_graph_tensor_dims(self.handle, self._tid(t), dims, 64)
        return None if r < 0 else [None if dims[i] == DIM_SYMBOLIC else dims[i] for i in range(r)]

    def tensor_view_of(self, t):
        return lib().bp_graph_tensor_view_of(self.handle, self._tid(t))

    def tensor_producer(self, t):
        return lib().bp_graph_tensor_producer(self.handle, self._tid(t))

    def op_name(self, o):
        return lib().bp_graph_op_name(self.handle, self._oid(o)).decode()

    def op_type(self, o):
        return lib().bp_graph_op_type(self.handle, self._oid(o)).decode()

    def op_inputs(self, o):
        o = self._oid(o)
        return [lib().bp_graph_op_input(self.handle, o, i) for i in range(lib().bp_graph_op_n_inputs(self.handle, o))]

    def op_outputs(self, o):
        o = self._oid(o)
        return [lib().bp_graph_op_output(self.handle, o, i) for i in range(lib().bp_graph_op_n_outputs(self.handle, o))]

    def hash(self):
        out = (ctypes.c_uint64 * 2)()
        lib().bp_graph_hash(self.handle, out)
        return (out[0], out[1])

    def write_json(self, path):
        """Writes the graph as JSON (path "-" = stdout)."""
        err = L.Error()
        _check(lib().bp_graph_write_json(self.handle, _str(str(path), "path"), ctypes.byref(err)), err)

    # -- planning
    def plan(self, options=None, order=None, **kw):
        """Plans the graph (finalizing it first): PlanOptions or keyword
        options; `order` (op ids) plans that order instead of scheduling."""
        return Plan._make(self, PlanOptions.of(options, **kw), order)

    def schedule(self, options=None, **kw):
        """An order (op ids) and the scheduler's info dict."""
        o = PlanOptions.of(options, **kw)
        h = self._ready()
        order = (ctypes.c_int32 * max(1, self.n_ops))()
        info, err = L.ScheduleInfo(), L.Error()
        _check(lib().bp_schedule_ex(h, ctypes.byref(o._c), order, ctypes.byref(info), ctypes.byref(err)), err)
        return list(order[:self.n_ops]), {"peak_bytes": info.peak_bytes, "lower_bound": info.lower_bound,
                                          "optimal": bool(info.optimal), "seconds": info.seconds,
                                          "picked": info.picked.decode() if info.picked else None}

    def peak(self, order, options=None, **kw):
        """The order's peak (the plan's lower bound for it) and the step of it."""
        o = PlanOptions.of(options, **kw)
        h = self._ready()
        arr = self._order_array(order)
        peak, step, err = ctypes.c_uint64(), ctypes.c_int32(), L.Error()
        _check(lib().bp_schedule_peak(h, ctypes.byref(o._c), arr, ctypes.byref(peak), ctypes.byref(step),
                                      ctypes.byref(err)), err)
        return peak.value, step.value

    def lifetimes(self, order):
        h = self._ready()
        arr = self._order_array(order)
        n = max(1, self.n_tensors)
        first, last, err = (ctypes.c_int32 * n)(), (ctypes.c_int32 * n)(), L.Error()
        _check(lib().bp_lifetimes(h, arr, first, last, ctypes.byref(err)), err)
        return list(zip(first[:self.n_tensors], last[:self.n_tensors]))

    def _order_array(self, order):
        if not isinstance(order, (list, tuple)):
            raise TypeError("bufplan: an order must be a list of op ids, not %s" % type(order).__name__)
        if len(order) != self.n_ops:
            raise BufplanError(4, "%s: the order has %d ops, the graph %d" % (self.name, len(order), self.n_ops))
        return (ctypes.c_int32 * max(1, len(order)))(*[_int(x, "op id in the order") for x in order])


# ---------------------------------------------------------------- engine

class Engine(_Owned):
    """An engine profile (include/bufplan_engine.h, docs/FORMATS.md "Engine
    profiles"): which outputs of each op type are views, which may be written
    in place, the workspace each needs.  Engine.load(name_or_path) takes a
    built-in name ("default", "strict", "ort-cpu") or a "bufplan-engine" JSON
    file; Engine.parse_json(text) a JSON text; Engine.from_dict(d) the same
    document as a dict."""

    def __init__(self, _handle):
        self._h = _handle

    _free_fn, _what = "bp_engine_free", "engine profile"

    @classmethod
    def load(cls, name_or_path):
        h, err = ctypes.c_void_p(), L.Error()
        _check(lib().bp_engine_load(_str(str(name_or_path), "engine"), None, ctypes.byref(h), ctypes.byref(err)), err)
        return cls(h.value)

    @classmethod
    def parse_json(cls, text, filename="<string>"):
        b = _str(text, "engine profile JSON")
        h, err = ctypes.c_void_p(), L.Error()
        _check(lib().bp_engine_parse_json(b, len(b), _str(filename, "filename"), None, ctypes.byref(h),
                                          ctypes.byref(err)), err)
        return cls(h.value)

    @classmethod
    def from_dict(cls, d, filename="<dict>"):
        import json
        if not isinstance(d, dict):
            raise TypeError("bufplan: an engine profile dict must be a dict, not %s" % type(d).__name__)
        return cls.parse_json(json.dumps(d), filename)

    @staticmethod
    def builtins():
        """The built-in profile names."""
        p, out, i = lib().bp_engine_builtins(), [], 0
        while p[i]:
            out.append(p[i].decode())
            i += 1
        return out

    @property
    def name(self):
        return lib().bp_engine_name(self.handle).decode()

    @property
    def concat_inplace(self):
        return bool(lib().bp_engine_concat_inplace(self.handle))

    @property
    def graph_hints(self):
        return bool(lib().bp_engine_graph_hints(self.handle))

    @property
    def n_ops(self):
        return lib().bp_engine_n_ops(self.handle)

    def digest(self):
        return lib().bp_engine_digest(self.handle)

    def __eq__(self, other):
        return isinstance(other, Engine) and bool(lib().bp_engine_equal(self.handle, other.handle))

    __hash__ = _Owned.__hash__

    def apply_workspaces(self, graph):
        """Gives graph's ops the workspaces this profile's formulas say."""
        err = L.Error()
        _check(lib().bp_engine_apply_workspaces(self.handle, graph.handle, ctypes.byref(err)), err)
        graph._finalized = True

    def __repr__(self):
        return "Engine(%r)" % (self.name if getattr(self, "_h", None) else "<freed>")


def _engine_of(v):
    """An Engine from a name, a path, a dict or an Engine; None for None."""
    if v is None or isinstance(v, Engine):
        return v
    if isinstance(v, dict):
        return Engine.from_dict(v)
    if isinstance(v, (str, bytes)) or hasattr(v, "__fspath__"):
        return Engine.load(v.decode() if isinstance(v, bytes) else str(v))
    raise TypeError("bufplan: engine must be a name, a profile file, a dict or an Engine, not %s" % type(v).__name__)


def parse_fallback(v):
    """"none", "recompute", "offload", "recompute,offload" (or a list of the
    words, or the BP_FALLBACK_* bits) -> the bits."""
    if isinstance(v, (list, tuple)):
        v = ",".join(v) if v else "none"
    if isinstance(v, str):
        out = ctypes.c_uint()
        if not lib().bp_fallback_parse(v.encode(), ctypes.byref(out)):
            raise BufplanError(4, "bufplan: fallback %r is not one of none, recompute, offload or "
                                  "a comma list of the last two" % (v,))
        return out.value
    return _int(v, "fallback", 0, FALLBACK_RECOMPUTE | FALLBACK_OFFLOAD)


FALLBACK_RECOMPUTE, FALLBACK_OFFLOAD = 1, 2


# ---------------------------------------------------------------- options

class PlanOptions:
    """bp_plan_options: sched, assign (names or numbers), alpha, beta,
    budget, alignment (ints or "4M"-style strings), time_limit, seed,
    no_alias, plan_inputs, plan_constants, threads, progress, fence_aware,
    fallback ("none", "recompute", "offload", "recompute,offload" or the
    bits; read back as the word list), host_bandwidth (bytes/s, a number or
    "16G"), engine (a built-in name, a profile file, a profile dict or an
    Engine; read back as the Engine, None for the default), concat_inplace."""
    FIELDS = ("sched", "assign", "alpha", "beta", "budget", "alignment", "time_limit", "seed", "no_alias",
              "plan_inputs", "plan_constants", "threads", "progress", "fence_aware", "fallback", "host_bandwidth",
              "engine", "concat_inplace")

    def __init__(self, **kw):
        self._c = L.PlanOptions()
        object.__setattr__(self, "_engine", None)   # keeps the profile the C struct points at alive
        lib().bp_plan_options_init(ctypes.byref(self._c))
        for k, v in kw.items():
            setattr(self, k, v)

    @classmethod
    def of(cls, options=None, **kw):
        if options is None:
            return cls(**kw)
        if not isinstance(options, PlanOptions):
            raise TypeError("bufplan: options must be a PlanOptions, not %s" % type(options).__name__)
        if kw:
            o = cls(**options.as_dict())
            for k, v in kw.items():
                setattr(o, k, v)
            return o
        return options

    def __setattr__(self, k, v):
        if k == "_c":
            return object.__setattr__(self, k, v)
        if k not in self.FIELDS:
            raise TypeError("bufplan: unknown plan option %r (options: %s)" % (k, ", ".join(self.FIELDS)))
        if k in ("sched", "assign"):
            if isinstance(v, str):
                out = ctypes.c_int()
                parse = lib().bp_sched_parse if k == "sched" else lib().bp_assign_parse
                if parse(v.encode(), ctypes.byref(out)) != 0:
                    raise ValueError("bufplan: unknown %s %r" % ("scheduler" if k == "sched" else "assigner", v))
                v = out.value
            else:
                v = _int(v, k, 0, 7 if k == "sched" else 3)
        elif k in ("alpha", "beta", "time_limit"):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError("bufplan: %s must be a number, not %s" % (k, type(v).__name__))
            v = float(v)
        elif k in ("budget", "alignment"):
            v = parse_bytes(v) if isinstance(v, str) else _int(v, k, 0, (1 << 64) - 1)
        elif k == "seed":
            v = _int(v, k, 0, (1 << 64) - 1)
        elif k == "threads":
            v = _int(v, k, 0, 1 << 16)
        elif k == "fallback":
            v = parse_fallback(v)
        elif k == "host_bandwidth":
            if isinstance(v, str):
                v = parse_bytes(v)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError("bufplan: host_bandwidth must be a number of bytes/s, not %s" % type(v).__name__)
            if not v > 0 or v == float("inf"):
                raise ValueError("bufplan: host_bandwidth = %r is not a positive number of bytes/s" % (v,))
            v = float(v)
        elif k == "engine":
            e = _engine_of(v)
            object.__setattr__(self, "_engine", e)
            self._c.engine = e.handle if e is not None else None
            return None
        else:
            v = int(bool(v))
        setattr(self._c, k, v)

    def __getattr__(self, k):
        if k in PlanOptions.FIELDS:
            if k == "engine":
                return self._engine
            v = getattr(self._c, k)
            if k == "sched":
                return lib().bp_sched_name(v).decode()
            if k == "assign":
                return lib().bp_assign_name(v).decode()
            if k == "fallback":
                return ",".join(w for b, w in ((FALLBACK_RECOMPUTE, "recompute"), (FALLBACK_OFFLOAD, "offload"))
                                if v & b) or "none"
            return v
        raise AttributeError(k)

    def as_dict(self):
        return {k: getattr(self, k) for k in self.FIELDS}

    def __repr__(self):
        return "PlanOptions(%s)" % ", ".join("%s=%r" % kv for kv in self.as_dict().items())


# ------------------------------------------------------------------- plan

class Plan(_Owned):
    """A plan of a graph: .schedule, .tensor(t), .events(), .stats, verify(),
    write_json(), write_events_csv(), viz_html(), viz_svg()."""

    def __init__(self, graph, handle):
        self.graph = graph
        self._h = handle

    @classmethod
    def _make(cls, g, o, order):
        h, err = ctypes.c_void_p(), L.Error()
        gh = g._ready()
        if order is None:
            _check(lib().bp_plan_graph(gh, ctypes.byref(o._c), ctypes.byref(h), ctypes.byref(err)), err)
        else:
            arr = g._order_array(order)
            _check(lib().bp_plan_graph_order(gh, ctypes.byref(o._c), arr, ctypes.byref(h), ctypes.byref(err)), err)
        return cls(g, h.value)

    @classmethod
    def read_json(cls, graph, path):
        if not isinstance(graph, Graph):
            raise TypeError("bufplan: read_json needs the plan's Graph, not %s" % type(graph).__name__)
        h, err = ctypes.c_void_p(), L.Error()
        _check(lib().bp_plan_read_json(graph._ready(), _str(str(path), "path"), ctypes.byref(h), ctypes.byref(err)), err)
        return cls(graph, h.value)

    @classmethod
    def parse_json(cls, graph, text, filename="<string>"):
        if not isinstance(graph, Graph):
            raise TypeError("bufplan: parse_json needs the plan's Graph, not %s" % type(graph).__name__)
        b = _str(text, "JSON text")
        h, err = ctypes.c_void_p(), L.Error()
        _check(lib().bp_plan_parse_json(graph._ready(), b, len(b), _str(filename, "filename"), ctypes.byref(h),
                                        ctypes.byref(err)), err)
        return cls(graph, h.value)

    _free_fn, _what = "bp_plan_free", "plan"

    @property
    def handle(self):
        self.graph.handle  # raises when the graph was freed
        return _Owned.handle.fget(self)

    @property
    def stats(self):
        s = lib().bp_plan_get_stats(self.handle).contents
        return {k: getattr(s, k) for k, _ in L.PlanStats._fields_}

    @property
    def arena_bytes(self):
        return lib().bp_plan_get_stats(self.handle).contents.arena_bytes

    @property
    def lower_bound_bytes(self):
        return lib().bp_plan_get_stats(self.handle).contents.lower_bound_bytes

    @property
    def alignment(self):
        return lib().bp_plan_alignment(self.handle)

    @property
    def schedule(self):
        h = self.handle
        n = lib().bp_plan_n_steps(h)
        p = lib().bp_plan_schedule(h)
        return [p[i] for i in range(n)]

    @property
    def sched(self):
        return lib().bp_sched_name(lib().bp_plan_sched(self.handle)).decode()

    @property
    def assign(self):
        return lib().bp_assign_name(lib().bp_plan_assign(self.handle)).decode()

    def tensor(self, t):
        """{first, last, offset (None outside the arena), bytes, buffer, kind, alias_of,
        view_offset (where its bytes start in alias_of's)}."""
        t = self.graph._tid(t)
        h = self.handle
        if t >= lib().bp_plan_n_tensors(h):
            raise IndexError("bufplan: tensor %d is not in the plan" % t)
        tp = lib().bp_plan_tensor(h, t).contents
        return {"first": tp.first, "last": tp.last, "offset": None if tp.offset == NO_OFFSET else tp.offset,
                "bytes": tp.bytes, "buffer": tp.buffer, "kind": KINDS[tp.kind] if tp.kind < len(KINDS) else tp.kind,
                "alias_of": tp.alias_of, "view_offset": tp.view_offset}

    def tensors(self):
        """Every tensor's placement as a list (index = tensor id)."""
        h = self.handle
        n = lib().bp_plan_n_tensors(h)
        out = []
        for t in range(n):
            tp = lib().bp_plan_tensor(h, t).contents
            out.append((tp.first, tp.last, None if tp.offset == NO_OFFSET else tp.offset, tp.bytes, tp.buffer,
                        tp.kind, tp.alias_of))
        return out

    def copies(self):
        """The recompute and offload copies of a plan made under a budget
        (docs/FALLBACK.md), sorted by (tensor, first): dicts {tensor (the
        storage root), kind ("recompute" or "prefetch"), op (the op run
        again, None for a prefetch), evict (the previous copy leaves after
        this step's op), first, last (steps in the arena), offset}."""
        h = self.handle
        out = []
        for i in range(lib().bp_plan_n_copies(h)):
            c = lib().bp_plan_copy(h, i).contents
            out.append({"tensor": c.tensor, "kind": COPY_KINDS[c.kind] if c.kind < len(COPY_KINDS) else c.kind,
                        "op": None if c.op < 0 else c.op, "evict": c.evict, "first": c.first, "last": c.last,
                        "offset": c.offset})
        return out

    @property
    def engine_name(self):
        """The name of the engine profile the plan was made for ("default" when none)."""
        e = lib().bp_plan_engine(self.handle)
        return lib().bp_engine_name(e).decode() if e else "default"

    def events(self):
        """[(type, tensor, op, buffer, offset)] with type "alloc" / "exec" / "free",
        and "recompute" / "offload" / "prefetch" in a plan with copies."""
        h = self.handle
        n = lib().bp_plan_n_events(h)
        ev = lib().bp_plan_events(h)
        return [(EVENTS[ev[i].type], ev[i].tensor, ev[i].op, ev[i].buffer,
                 None if ev[i].offset == NO_OFFSET else ev[i].offset) for i in range(n)]

    def live_bytes(self):
        h = self.handle
        n = lib().bp_plan_n_steps(h)
        out, err = (ctypes.c_uint64 * max(1, n))(), L.Error()
        _check(lib().bp_plan_live_bytes(h, out, ctypes.byref(err)), err)
        return list(out[:n])

    def verify(self):
        """bp_verify: True, or BufplanError (status "verification failed") with the problems."""
        return verify(self.graph, self)

    def write_json(self, path):
        err = L.Error()
        _check(lib().bp_plan_write_json(self.handle, self.graph.handle, _str(str(path), "path"), ctypes.byref(err)), err)

    def write_events_csv(self, path):
        err = L.Error()
        _check(lib().bp_plan_write_events_csv(self.handle, self.graph.handle, _str(str(path), "path"),
                                              ctypes.byref(err)), err)

    def _viz(self, fn, path, title, compare, color, width, height):
        o = L.VizOptions()
        lib().bp_viz_options_init(ctypes.byref(o))
        keep = []
        if title is not None:
            keep.append(_str(title, "title"))
            o.title = keep[-1]
        if compare is not None:
            if not isinstance(compare, Plan):
                raise TypeError("bufplan: compare must be a Plan, not %s" % type(compare).__name__)
            o.compare = compare.handle
        if color not in ("op", "buffer"):
            raise ValueError("bufplan: color must be 'op' or 'buffer'")
        o.color = 0 if color == "op" else 1
        o.width, o.height = _int(width, "width", 0, 1 << 16), _int(height, "height", 0, 1 << 16)
        err = L.Error()
        _check(fn(self.graph.handle, self.handle, ctypes.byref(o), _str(str(path), "path"), ctypes.byref(err)), err)

    def viz_html(self, path, title=None, compare=None, color="op"):
        """The interactive memory-timeline page (docs/VIZ.md)."""
        self._viz(lib().bp_viz_write_html, path, title, compare, color, 0, 0)

    def viz_svg(self, path, title=None, color="op", width=0, height=0):
        self._viz(lib().bp_viz_write_svg, path, title, None, color, width, height)


def verify(graph, plan):
    """The independent verifier: True, or BufplanError naming the problems."""
    if not isinstance(graph, Graph) or not isinstance(plan, Plan):
        raise TypeError("bufplan: verify(graph, plan) takes a Graph and a Plan")
    err = L.Error()
    _check(lib().bp_verify(graph._ready(), plan.handle, ctypes.byref(err)), err)
    return True


# ------------------------------------------------------------------- pack

def pack(intervals, method="bestfit", time_limit=10.0, capacity=0, seed=1, check=True):
    """Offsets for half-open intervals (lower, upper, size[, alignment[, fixed_offset]])
    in one arena (MiniMalloc's model; bufplan pack).  Returns (offsets, info)."""
    if not isinstance(intervals, (list, tuple)):
        raise TypeError("bufplan: pack takes a list of (lower, upper, size) tuples")
    n = len(intervals)
    iv = (L.Interval * max(1, n))()
    for i, t in enumerate(intervals):
        if not isinstance(t, (list, tuple)) or not 3 <= len(t) <= 5:
            raise TypeError("bufplan: interval %d must be (lower, upper, size[, alignment[, fixed_offset]])" % i)
        iv[i].lower = _int(t[0], "lower of interval %d" % i, -(1 << 63), (1 << 63) - 1)
        iv[i].upper = _int(t[1], "upper of interval %d" % i, -(1 << 63), (1 << 63) - 1)
        iv[i].size = _int(t[2], "size of interval %d" % i, 0, (1 << 64) - 1)
        iv[i].alignment = _int(t[3], "alignment", 0, 1 << 40) if len(t) > 3 else 0
        iv[i].fixed_offset = NO_OFFSET if len(t) < 5 or t[4] is None else _int(t[4], "fixed offset", 0)
    kind = ctypes.c_int()
    if lib().bp_assign_parse(_str(method, "method"), ctypes.byref(kind)) != 0:
        raise ValueError("bufplan: unknown assigner %r" % (method,))
    o = L.AssignOptions()
    lib().bp_assign_options_init(ctypes.byref(o))
    o.time_limit = float(time_limit)
    o.capacity = _int(capacity, "capacity", 0)
    o.seed = _int(seed, "seed", 0)
    offs, res, err = (ctypes.c_uint64 * max(1, n))(), L.AssignResult(), L.Error()
    _check(lib().bp_assign_intervals(iv, n, kind.value, ctypes.byref(o), offs, ctypes.byref(res), ctypes.byref(err)), err)
    if check and n and res.fits != 0:
        _check(lib().bp_intervals_check(iv, n, offs, 0, ctypes.byref(err)), err)
    return list(offs[:n]), {"arena_bytes": res.arena_bytes, "lower_bound": res.lower_bound,
                            "optimal": bool(res.optimal), "fits": res.fits, "seconds": res.seconds}


# ------------------------------------------------------------------ cache

class PlanCache(_Owned):
    """The on-disk plan cache (docs/DYNAMIC.md): plan(graph, signature, options)
    returns (Plan, hit)."""

    def __init__(self, directory, verify=True):
        h, err = ctypes.c_void_p(), L.Error()
        _check(lib().bp_plan_cache_open(_str(str(directory), "directory"), None, ctypes.byref(h), ctypes.byref(err)), err)
        self._h = h.value
        lib().bp_plan_cache_set_verify(self._h, int(bool(verify)))

    _free_fn, _what = "bp_plan_cache_close", "plan cache (closed)"

    def close(self):
        self.free()

    def plan(self, graph, signature="", options=None, **kw):
        if not isinstance(graph, Graph):
            raise TypeError("bufplan: PlanCache.plan needs a Graph, not %s" % type(graph).__name__)
        o = PlanOptions.of(options, **kw)
        h, hit, err = ctypes.c_void_p(), ctypes.c_int(), L.Error()
        _check(lib().bp_plan_cache_plan(self.handle, graph._ready(), _str(signature, "signature"), ctypes.byref(o._c),
                                        ctypes.byref(h), ctypes.byref(hit), ctypes.byref(err)), err)
        return Plan(graph, h.value), bool(hit.value)

    def get(self, graph, signature="", options=None, **kw):
        """The cached plan, or None on a miss."""
        o = PlanOptions.of(options, **kw)
        key, err = L.CacheKey(), L.Error()
        _check(lib().bp_cache_key_make(graph._ready(), _str(signature, "signature"), ctypes.byref(o._c),
                                       ctypes.byref(key), ctypes.byref(err)), err)
        h = ctypes.c_void_p()
        _check(lib().bp_plan_cache_get(self.handle, ctypes.byref(key), graph.handle, ctypes.byref(h),
                                       ctypes.byref(err)), err)
        return Plan(graph, h.value) if h.value else None

    def stats(self):
        s = L.CacheStats()
        lib().bp_plan_cache_get_stats(self.handle, ctypes.byref(s))
        return {k: getattr(s, k) for k, _ in L.CacheStats._fields_ if k != "_reserved"}

    @property
    def last_warning(self):
        return lib().bp_plan_cache_last_warning(self.handle).decode()
