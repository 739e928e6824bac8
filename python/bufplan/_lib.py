"""Finding and loading libbufplan.so, and the ctypes prototypes of the C API
(include/bufplan*.h) that the binding uses.

Lookup order: the path in BUFPLAN_LIBRARY; next to the package (the package
directory itself, or the library directory that `cmake --install` recorded in
_install_paths.py); the build trees of the repository the package sits in
(BUFPLAN_BUILD, then build/, then any build-*/).  The first that exists is
loaded; none is an ImportError naming every place tried.
"""
import ctypes
import glob
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))   # python/bufplan -> repository root
SONAME = "libbufplan.so"


def _install_dirs():
    """The libdir and bindir `cmake --install` wrote, or (None, None)."""
    try:
        from . import _install_paths  # written by cmake --install only
        return _install_paths.LIBDIR, _install_paths.BINDIR
    except ImportError:
        return None, None


def candidates():
    """Every path the library is looked for at, in order."""
    out = []
    env = os.environ.get("BUFPLAN_LIBRARY")
    if env:
        out.append(env)
    out.append(os.path.join(_HERE, SONAME))
    libdir, _ = _install_dirs()
    if libdir:
        out.append(os.path.join(libdir, SONAME))
    build = os.environ.get("BUFPLAN_BUILD")
    if build:
        out.append(os.path.join(build, SONAME))
    out.append(os.path.join(_REPO, "build", SONAME))
    out.extend(sorted(glob.glob(os.path.join(_REPO, "build-*", SONAME))))
    return out


def find_library():
    """The path of the library to load; ImportError when there is none."""
    tried = candidates()
    if os.environ.get("BUFPLAN_LIBRARY"):
        path = os.environ["BUFPLAN_LIBRARY"]
        if not os.path.isfile(path):
            raise ImportError("bufplan: BUFPLAN_LIBRARY=%s: no such file" % path)
        return path
    for p in tried:
        if os.path.isfile(p):
            return p
    raise ImportError("bufplan: libbufplan.so not found; tried: %s (set BUFPLAN_LIBRARY, or build with "
                      "cmake -S . -B build && cmake --build build)" % ", ".join(tried))


# ------------------------------------------------------------- structures

class Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("msg", ctypes.c_char * 1024)]


class PlanOptions(ctypes.Structure):
    # bp_plan_options, then room for fields a later library may append (its
    # _init writes them; this struct never reads them)
    _fields_ = [("sched", ctypes.c_int), ("assign", ctypes.c_int),
                ("alpha", ctypes.c_double), ("beta", ctypes.c_double),
                ("budget", ctypes.c_uint64), ("alignment", ctypes.c_uint64),
                ("time_limit", ctypes.c_double), ("seed", ctypes.c_uint64),
                ("no_alias", ctypes.c_int), ("plan_inputs", ctypes.c_int),
                ("plan_constants", ctypes.c_int), ("threads", ctypes.c_int),
                ("progress", ctypes.c_int), ("fence_aware", ctypes.c_int),
                ("fallback", ctypes.c_uint), ("host_bandwidth", ctypes.c_double),
                ("engine", ctypes.c_void_p), ("concat_inplace", ctypes.c_int),
                ("_reserved", ctypes.c_uint8 * 4096)]


class TensorPlan(ctypes.Structure):
    _fields_ = [("first", ctypes.c_int32), ("last", ctypes.c_int32), ("offset", ctypes.c_uint64),
                ("bytes", ctypes.c_uint64), ("buffer", ctypes.c_int32), ("kind", ctypes.c_int),
                ("alias_of", ctypes.c_int32), ("view_offset", ctypes.c_uint64)]


class Event(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("tensor", ctypes.c_int32), ("op", ctypes.c_int32),
                ("buffer", ctypes.c_int32), ("offset", ctypes.c_uint64)]


class PlanStats(ctypes.Structure):
    _fields_ = [("arena_bytes", ctypes.c_uint64), ("lower_bound_bytes", ctypes.c_uint64),
                ("naive_bytes", ctypes.c_uint64), ("alias_saved_bytes", ctypes.c_uint64),
                ("dynamic_bytes", ctypes.c_uint64), ("peak_step", ctypes.c_int32),
                ("n_planned", ctypes.c_int32), ("n_storages", ctypes.c_int32),
                ("n_dynamic", ctypes.c_int32), ("plan_seconds", ctypes.c_double),
                ("schedule_seconds", ctypes.c_double), ("assign_seconds", ctypes.c_double),
                ("optimal", ctypes.c_int), ("sched_optimal", ctypes.c_int),
                ("makespan", ctypes.c_double), ("n_control_flow", ctypes.c_int32),
                ("n_body_planned", ctypes.c_int32), ("n_views", ctypes.c_int32),
                ("n_inputs", ctypes.c_int32), ("n_weights", ctypes.c_int32),
                ("recompute_cost", ctypes.c_double), ("transfer_cost", ctypes.c_double),
                ("offload_bytes", ctypes.c_uint64), ("overhead_percent", ctypes.c_double),
                ("n_recomputes", ctypes.c_int32), ("n_offloads", ctypes.c_int32)]


class Copy(ctypes.Structure):
    _fields_ = [("tensor", ctypes.c_int32), ("kind", ctypes.c_int), ("op", ctypes.c_int32),
                ("evict", ctypes.c_int32), ("first", ctypes.c_int32), ("last", ctypes.c_int32),
                ("offset", ctypes.c_uint64)]


class ScheduleInfo(ctypes.Structure):
    _fields_ = [("peak_bytes", ctypes.c_uint64), ("lower_bound", ctypes.c_uint64),
                ("optimal", ctypes.c_int), ("states", ctypes.c_uint64),
                ("seconds", ctypes.c_double), ("picked", ctypes.c_char_p),
                ("_reserved", ctypes.c_uint8 * 256)]


class Interval(ctypes.Structure):
    _fields_ = [("lower", ctypes.c_int64), ("upper", ctypes.c_int64), ("size", ctypes.c_uint64),
                ("alignment", ctypes.c_uint64), ("fixed_offset", ctypes.c_uint64)]


class AssignOptions(ctypes.Structure):
    _fields_ = [("time_limit", ctypes.c_double), ("capacity", ctypes.c_uint64),
                ("seed", ctypes.c_uint64), ("progress", ctypes.c_int),
                ("alloc", ctypes.c_void_p), ("_reserved", ctypes.c_uint8 * 1024)]


class AssignResult(ctypes.Structure):
    _fields_ = [("arena_bytes", ctypes.c_uint64), ("lower_bound", ctypes.c_uint64),
                ("optimal", ctypes.c_int), ("fits", ctypes.c_int), ("nodes", ctypes.c_uint64),
                ("seconds", ctypes.c_double), ("_reserved", ctypes.c_uint8 * 256)]


class VizOptions(ctypes.Structure):
    _fields_ = [("title", ctypes.c_char_p), ("label", ctypes.c_char_p), ("compare", ctypes.c_void_p),
                ("compare_label", ctypes.c_char_p), ("history_path", ctypes.c_char_p),
                ("color", ctypes.c_int), ("width", ctypes.c_int), ("height", ctypes.c_int),
                ("progress", ctypes.c_int), ("_reserved", ctypes.c_uint8 * 1024)]


class CacheKey(ctypes.Structure):
    _fields_ = [("graph", ctypes.c_uint64 * 2), ("signature", ctypes.c_char * 1024),
                ("options", ctypes.c_char * 512), ("file", ctypes.c_char * 40),
                ("_reserved", ctypes.c_uint8 * 1024)]


class CacheStats(ctypes.Structure):
    _fields_ = [("hits", ctypes.c_uint64), ("misses", ctypes.c_uint64), ("bad_files", ctypes.c_uint64),
                ("writes", ctypes.c_uint64), ("write_errors", ctypes.c_uint64),
                ("load_seconds", ctypes.c_double), ("verify_seconds", ctypes.c_double),
                ("_reserved", ctypes.c_uint8 * 256)]


# ------------------------------------------------------------- prototypes

P = ctypes.c_void_p
I32 = ctypes.c_int32
U64 = ctypes.c_uint64
S = ctypes.c_char_p
E = ctypes.POINTER(Error)
ST = ctypes.c_int

_PROTOS = {
    "bp_status_str": (S, [ST]),
    "bp_version": (S, []),
    "bp_parse_bytes": (ctypes.c_bool, [S, ctypes.POINTER(U64)]),
    "bp_dtype_size": (ctypes.c_size_t, [ST]),
    "bp_dtype_name": (S, [ST]),
    "bp_dtype_parse": (ST, [S]),
    "bp_graph_new": (P, [S, P]),
    "bp_graph_free": (None, [P]),
    "bp_graph_add_tensor": (ST, [P, S, U64, ctypes.POINTER(I32), E]),
    "bp_graph_add_tensor_shape": (ST, [P, S, ST, ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                                       ctypes.POINTER(S), ctypes.POINTER(I32), E]),
    "bp_graph_set_view": (ST, [P, I32, I32, E]),
    "bp_graph_add_op": (ST, [P, S, S, ctypes.c_int, ctypes.POINTER(I32), ctypes.c_int,
                             ctypes.POINTER(I32), ctypes.c_double, ctypes.POINTER(I32), E]),
    "bp_graph_set_inplace": (ST, [P, I32, I32, I32, E]),
    "bp_graph_mark": (ST, [P, I32, ctypes.c_uint, E]),
    "bp_graph_append_backward": (ST, [P, E]),
    "bp_graph_bind_dim": (ST, [P, S, ctypes.c_int64, E]),
    "bp_graph_finalize": (ST, [P, E]),
    "bp_graph_name": (S, [P]),
    "bp_graph_n_tensors": (I32, [P]),
    "bp_graph_n_ops": (I32, [P]),
    "bp_graph_find_tensor": (I32, [P, S]),
    "bp_graph_find_op": (I32, [P, S]),
    "bp_graph_tensor_name": (S, [P, I32]),
    "bp_graph_tensor_bytes": (U64, [P, I32]),
    "bp_graph_tensor_flags": (ctypes.c_uint, [P, I32]),
    "bp_graph_tensor_dtype": (ST, [P, I32]),
    "bp_graph_tensor_dims": (ctypes.c_int, [P, I32, ctypes.POINTER(ctypes.c_int64), ctypes.c_int]),
    "bp_graph_tensor_view_of": (I32, [P, I32]),
    "bp_graph_tensor_producer": (I32, [P, I32]),
    "bp_graph_op_name": (S, [P, I32]),
    "bp_graph_op_type": (S, [P, I32]),
    "bp_graph_op_n_inputs": (ctypes.c_int, [P, I32]),
    "bp_graph_op_n_outputs": (ctypes.c_int, [P, I32]),
    "bp_graph_op_input": (I32, [P, I32, ctypes.c_int]),
    "bp_graph_op_output": (I32, [P, I32, ctypes.c_int]),
    "bp_graph_read": (ST, [S, P, ctypes.POINTER(P), E]),
    "bp_graph_parse_json": (ST, [S, ctypes.c_size_t, S, P, ctypes.POINTER(P), E]),
    "bp_graph_write_json": (ST, [P, S, E]),
    "bp_graph_hash": (None, [P, ctypes.POINTER(U64)]),
    "bp_gen": (ST, [S, P, P, ctypes.POINTER(P), E]),
    "bp_sched_name": (S, [ST]),
    "bp_assign_name": (S, [ST]),
    "bp_sched_parse": (ctypes.c_int, [S, ctypes.POINTER(ST)]),
    "bp_assign_parse": (ctypes.c_int, [S, ctypes.POINTER(ST)]),
    "bp_plan_options_init": (None, [ctypes.POINTER(PlanOptions)]),
    "bp_plan_graph": (ST, [P, ctypes.POINTER(PlanOptions), ctypes.POINTER(P), E]),
    "bp_plan_graph_order": (ST, [P, ctypes.POINTER(PlanOptions), ctypes.POINTER(I32), ctypes.POINTER(P), E]),
    "bp_plan_free": (None, [P]),
    "bp_plan_get_stats": (ctypes.POINTER(PlanStats), [P]),
    "bp_plan_n_steps": (I32, [P]),
    "bp_plan_schedule": (ctypes.POINTER(I32), [P]),
    "bp_plan_tensor": (ctypes.POINTER(TensorPlan), [P, I32]),
    "bp_plan_n_tensors": (I32, [P]),
    "bp_plan_alignment": (U64, [P]),
    "bp_plan_n_events": (ctypes.c_size_t, [P]),
    "bp_plan_events": (ctypes.POINTER(Event), [P]),
    "bp_plan_sched": (ST, [P]),
    "bp_plan_assign": (ST, [P]),
    "bp_plan_write_json": (ST, [P, P, S, E]),
    "bp_plan_write_events_csv": (ST, [P, P, S, E]),
    "bp_plan_read_json": (ST, [P, S, ctypes.POINTER(P), E]),
    "bp_plan_parse_json": (ST, [P, S, ctypes.c_size_t, S, ctypes.POINTER(P), E]),
    "bp_verify": (ST, [P, P, E]),
    "bp_lifetimes": (ST, [P, ctypes.POINTER(I32), ctypes.POINTER(I32), ctypes.POINTER(I32), E]),
    "bp_schedule_ex": (ST, [P, ctypes.POINTER(PlanOptions), ctypes.POINTER(I32),
                            ctypes.POINTER(ScheduleInfo), E]),
    "bp_schedule_peak": (ST, [P, ctypes.POINTER(PlanOptions), ctypes.POINTER(I32), ctypes.POINTER(U64),
                              ctypes.POINTER(I32), E]),
    "bp_assign_options_init": (None, [ctypes.POINTER(AssignOptions)]),
    "bp_assign_intervals": (ST, [ctypes.POINTER(Interval), ctypes.c_size_t, ST, ctypes.POINTER(AssignOptions),
                                 ctypes.POINTER(U64), ctypes.POINTER(AssignResult), E]),
    "bp_intervals_check": (ST, [ctypes.POINTER(Interval), ctypes.c_size_t, ctypes.POINTER(U64), U64, E]),
    "bp_intervals_max_live": (U64, [ctypes.POINTER(Interval), ctypes.c_size_t]),
    "bp_viz_options_init": (None, [ctypes.POINTER(VizOptions)]),
    "bp_viz_write_html": (ST, [P, P, ctypes.POINTER(VizOptions), S, E]),
    "bp_viz_write_svg": (ST, [P, P, ctypes.POINTER(VizOptions), S, E]),
    "bp_plan_live_bytes": (ST, [P, ctypes.POINTER(U64), E]),
    "bp_plan_cache_open": (ST, [S, P, ctypes.POINTER(P), E]),
    "bp_plan_cache_close": (None, [P]),
    "bp_plan_cache_set_verify": (None, [P, ctypes.c_int]),
    "bp_cache_key_make": (ST, [P, S, ctypes.POINTER(PlanOptions), ctypes.POINTER(CacheKey), E]),
    "bp_plan_cache_get": (ST, [P, ctypes.POINTER(CacheKey), P, ctypes.POINTER(P), E]),
    "bp_plan_cache_put": (ST, [P, ctypes.POINTER(CacheKey), P, P, E]),
    "bp_plan_cache_plan": (ST, [P, P, S, ctypes.POINTER(PlanOptions), ctypes.POINTER(P),
                                ctypes.POINTER(ctypes.c_int), E]),
    "bp_plan_cache_get_stats": (None, [P, ctypes.POINTER(CacheStats)]),
    "bp_plan_cache_last_warning": (S, [P]),
    "bp_plan_n_copies": (I32, [P]),
    "bp_plan_copy": (ctypes.POINTER(Copy), [P, I32]),
    "bp_copy_kind_name": (S, [ST]),
    "bp_fallback_parse": (ctypes.c_bool, [S, ctypes.POINTER(ctypes.c_uint)]),
    "bp_engine_load": (ST, [S, P, ctypes.POINTER(P), E]),
    "bp_engine_parse_json": (ST, [S, ctypes.c_size_t, S, P, ctypes.POINTER(P), E]),
    "bp_engine_free": (None, [P]),
    "bp_engine_name": (S, [P]),
    "bp_engine_concat_inplace": (ctypes.c_int, [P]),
    "bp_engine_graph_hints": (ctypes.c_int, [P]),
    "bp_engine_n_ops": (ctypes.c_int, [P]),
    "bp_engine_builtins": (ctypes.POINTER(S), []),
    "bp_engine_digest": (U64, [P]),
    "bp_engine_equal": (ctypes.c_int, [P, P]),
    "bp_plan_engine": (P, [P]),
    "bp_engine_apply_workspaces": (ST, [P, P, E]),
}


def load(path=None):
    """Loads the library (path, or find_library()) with every prototype set."""
    path = path or find_library()
    lib = ctypes.CDLL(path)
    for name, (res, args) in _PROTOS.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    lib._bufplan_path = path
    return lib
