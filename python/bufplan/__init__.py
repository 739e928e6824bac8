"""bufplan for Python: a ctypes binding to libbufplan.so (graphs built
through the C API or read from JSON / ONNX, planning with every option,
verify, pack, plan files, pictures, the plan cache) and, in bufplan.torch,
PyTorch models run in one planned arena.  docs/PYTHON.md is the guide.

    import bufplan
    g = bufplan.Graph("tiny")
    x = g.add_tensor("x", shape=[1, 64], dtype="f32"); g.mark(x, "input")
    ...
    plan = g.plan(sched="best", assign="bestfit")
    plan.verify(); plan.write_json("plan.json")
"""
from .core import (BufplanError, Engine, Graph, Plan, PlanCache, PlanOptions, pack, verify, version, parse_bytes,
                   dtype_parse, dtype_name, lib, TENSOR_INPUT, TENSOR_WEIGHT, TENSOR_OUTPUT, TENSOR_CONST)

__all__ = ["BufplanError", "Engine", "Graph", "Plan", "PlanCache", "PlanOptions", "pack", "verify", "version",
           "parse_bytes", "dtype_parse", "dtype_name", "lib", "library_path", "cli_path",
           "TENSOR_INPUT", "TENSOR_WEIGHT", "TENSOR_OUTPUT", "TENSOR_CONST"]


def library_path():
    """The path of the libbufplan.so this package loaded."""
    return lib()._bufplan_path


def cli_path():
    """The bufplan command-line binary that goes with the library."""
    from .cli import find_cli
    return find_cli()
