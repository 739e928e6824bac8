"""The `bufplan` console entry: the same CLI as the C binary, which it
runs (exec) with the same arguments, so every command, option, message and
exit code is the binary's own.

The binary is found at BUFPLAN_CLI; next to the loaded library (the build
tree keeps both in one folder); in the bindir `cmake --install` recorded; or
on PATH.
"""
import os
import shutil
import sys


def find_cli():
    """The path of the bufplan binary; FileNotFoundError naming the places tried."""
    from . import _lib
    tried = []
    env = os.environ.get("BUFPLAN_CLI")
    if env:
        if os.access(env, os.X_OK):
            return env
        raise FileNotFoundError("bufplan: BUFPLAN_CLI=%s is not an executable" % env)
    try:
        libdir = os.path.dirname(os.path.abspath(_lib.find_library()))
        tried += [os.path.join(libdir, "bufplan"), os.path.join(os.path.dirname(libdir), "bin", "bufplan")]
    except ImportError:
        pass
    _, bindir = _lib._install_dirs()
    if bindir:
        tried.append(os.path.join(bindir, "bufplan"))
    for p in tried:
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    on_path = shutil.which("bufplan")
    if on_path and os.path.realpath(on_path) != os.path.realpath(sys.argv[0] or ""):
        return on_path
    raise FileNotFoundError("bufplan: the bufplan binary was not found; tried: %s (set BUFPLAN_CLI)"
                            % ", ".join(tried + ["PATH"]))


def main(argv=None):
    """Runs the CLI with argv (default sys.argv[1:]); does not return on success."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        exe = find_cli()
    except FileNotFoundError as e:
        sys.stderr.write("%s\n" % e)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, [exe] + argv)
