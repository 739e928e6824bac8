"""The planned CPU allocator (python/csrc/planned_allocator.cpp) seen from
Python: finding and loading libbufplan_torch.so, installing it as torch's CPU
allocator, and the calls the runner makes around each op (the queue of
planned addresses, the calibration log, the counters).

The library is looked for at BUFPLAN_TORCH_ALLOCATOR, next to libbufplan.so,
in this package's folder.  When it is not there (built without libtorch-dev),
available() is False and the runner falls back to out= variants (see
runner.py), saying what that costs.
"""
import ctypes
import os
import threading

import torch  # noqa: F401  (libc10 must be loaded before the allocator library)

SONAME = "libbufplan_torch.so"
_state = {"lib": None, "tried": False, "why": ""}
_lock = threading.Lock()


def _candidates():
    out = []
    env = os.environ.get("BUFPLAN_TORCH_ALLOCATOR")
    if env:
        out.append(env)
    try:
        from .. import _lib
        out.append(os.path.join(os.path.dirname(os.path.abspath(_lib.find_library())), SONAME))
    except ImportError:
        pass
    out.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME))
    return out


def load():
    """The loaded and installed allocator library, or None (why() says why)."""
    with _lock:
        if _state["tried"]:
            return _state["lib"]
        _state["tried"] = True
        if os.environ.get("BUFPLAN_TORCH_NO_ALLOCATOR"):
            _state["why"] = "BUFPLAN_TORCH_NO_ALLOCATOR is set"
            return None
        tried = _candidates()
        for p in tried:
            if os.path.isfile(p):
                lib = ctypes.CDLL(p)
                _prototypes(lib)
                if lib.bpt_install() != 0:
                    _state["why"] = "%s: c10::SetCPUAllocator did not take it (another allocator has a higher priority)" % p
                    return None
                _state["lib"] = lib
                _state["path"] = p
                return lib
        _state["why"] = "%s not found (tried %s); build with libtorch-dev installed" % (SONAME, ", ".join(tried))
        return None


def available():
    return load() is not None


def why():
    """Why the allocator is not available ("" when it is)."""
    load()
    return _state["why"]


def path():
    load()
    return _state.get("path")


def _prototypes(lib):
    U64P = ctypes.POINTER(ctypes.c_uint64)
    lib.bpt_install.restype = ctypes.c_int
    lib.bpt_arena_add.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
    lib.bpt_arena_add.restype = ctypes.c_int
    lib.bpt_arena_remove.argtypes = [ctypes.c_uint64]
    lib.bpt_arena_remove.restype = None
    lib.bpt_expect.argtypes = [U64P, U64P, ctypes.c_int]
    lib.bpt_expect.restype = None
    lib.bpt_done.restype = ctypes.c_int
    lib.bpt_record.argtypes = [ctypes.c_int]
    lib.bpt_record.restype = None
    lib.bpt_log.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_int64]
    lib.bpt_log.restype = ctypes.c_int64
    lib.bpt_stats.argtypes = [ctypes.POINTER(ctypes.c_int64)]
    lib.bpt_stats.restype = None
    lib.bpt_reset_peak.restype = None


STAT_NAMES = ("live", "peak", "usable_live", "usable_peak", "outside_bytes", "outside_allocs", "served",
              "mismatches")


def stats():
    """The allocator's counters as a dict (STAT_NAMES)."""
    out = (ctypes.c_int64 * 8)()
    load().bpt_stats(out)
    return dict(zip(STAT_NAMES, out))


def reset_peak():
    load().bpt_reset_peak()


class Recording:
    """with Recording() as r: ...  -> r.log: [(kind 'alloc'|'free', size, addr)] of this thread."""

    def __enter__(self):
        self.lib = load()
        self.lib.bpt_record(1)
        self.log = []
        return self

    def take(self):
        """The entries since the last take()."""
        buf = (ctypes.c_int64 * (4 * 4096))()
        out = []
        while True:
            n = self.lib.bpt_log(buf, 4096)
            out.extend(("alloc" if buf[4 * i] == 0 else "free", buf[4 * i + 1], buf[4 * i + 2]) for i in range(n))
            if n < 4096:
                return out

    def __exit__(self, *a):
        self.lib.bpt_record(0)
        self.lib.bpt_log((ctypes.c_int64 * 4)(), 0)


def measure_peak(fn):
    """Runs fn() and returns (result, live peak, allocator peak): the bytes
    allocated on top of what was live before, as requested and as malloc
    rounds them."""
    lib = load()
    before = stats()
    lib.bpt_reset_peak()
    r = fn()
    after = stats()
    return r, after["peak"] - before["live"], after["usable_peak"] - before["usable_live"]
