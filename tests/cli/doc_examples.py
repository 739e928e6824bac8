#!/usr/bin/python3
"""The examples of a document, run: every fenced block right after a line
`<!-- example -->` is a terminal session.  Lines that start with `$ ` are
commands (run by bash in a scratch directory, in order, so a command may use
the files an earlier one wrote; `bufplan` is the CLI under test and
`../shared/data` the shared data); the lines after a command, up to the next
command, are its output (stdout and stderr).

    doc_examples.py DOC CLI DATA           check: exit 1 naming every example whose output differs
    doc_examples.py DOC CLI DATA --update  rewrite DOC with the outputs of today's CLI

Outputs are compared after normalising what changes from run to run: times
("5.566 ms", "(schedule 5.525, assign 0.011)", "3702237.4 ns/op", "0.3 s")
and percentages of time."""
import os, re, subprocess, sys, tempfile

MARK = "<!-- example -->"
NORM = [
    (re.compile(r"\(schedule [0-9.]+, assign [0-9.]+\)"), "(schedule T, assign T)"),
    (re.compile(r"\b[0-9]+(\.[0-9]+)? ?(ms|s|us|ns/op)\b"), r"T \2"),
    (re.compile(r"\([0-9]+(\.[0-9]+)?%\)"), "(P%)"),
]


def normal(text):
    for rx, sub in NORM:
        text = rx.sub(sub, text)
    return [l.rstrip() for l in text.rstrip("\n").split("\n")]


def blocks(lines):
    """(index of the opening fence, index of the closing fence) of each example."""
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == MARK and i + 1 < len(lines) and lines[i + 1].startswith("```"):
            j = i + 2
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            assert j < len(lines), "line %d: an example block is not closed" % (i + 2)
            out.append((i + 1, j))
            i = j
        i += 1
    return out


def run(cmd, cwd, env):
    p = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    return p.stdout.decode("utf-8", "replace").rstrip("\n")


def main():
    doc, cli, data = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    update = "--update" in sys.argv[4:]
    lines = open(doc, encoding="utf-8").read().split("\n")
    found = blocks(lines)
    assert found, "%s: no examples (a fenced block after %s)" % (doc, MARK)
    bad, new = 0, list(lines)
    with tempfile.TemporaryDirectory() as tmp:
        work, shared, bindir = os.path.join(tmp, "work"), os.path.join(tmp, "shared"), os.path.join(tmp, "bin")
        for d in (work, shared, bindir):
            os.mkdir(d)
        os.symlink(data, os.path.join(shared, "data"))
        os.symlink(cli, os.path.join(bindir, "bufplan"))
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), LC_ALL="C")
        repl = []
        for start, end in found:
            body = lines[start + 1:end]
            cmds = [k for k, l in enumerate(body) if l.startswith("$ ")]
            assert cmds and cmds[0] == 0, "%s:%d: an example starts with a `$ ` command" % (doc, start + 2)
            out = []
            for n, k in enumerate(cmds):
                want = body[k + 1:cmds[n + 1] if n + 1 < len(cmds) else len(body)]
                got = run(body[k][2:], work, env)
                got_lines = got.split("\n") if got else []
                if normal("\n".join(want)) != normal(got):
                    bad += 1
                    if not update:
                        print("%s:%d: `%s` printed:\n%s\n--- the document says:\n%s\n" % (doc, start + 2 + k, body[k][2:], got,
                                                                                       "\n".join(want)))
                out += [body[k]] + got_lines
            repl.append((start, end, out))
        for start, end, out in reversed(repl):
            new[start + 1:end] = out
    if update:
        open(doc, "w", encoding="utf-8").write("\n".join(new))
        print("%s: %d examples, %d outputs rewritten" % (doc, len(found), bad))
        return 0
    print("%s: %d examples, %d outputs differ" % (doc, len(found), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
