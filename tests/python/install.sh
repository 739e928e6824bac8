#!/usr/bin/env bash
# The Python package installed by `cmake --install` (into a temporary prefix)
# finds its library and the CLI by itself, and its console entry is the CLI:
# the same report (but its timing line) and exit codes as the binary.
. "$(dirname "$0")/../cli/harness.bash"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || { echo "SKIP: no python3"; exit 0; }
cmake --install "${BP_BUILD:?}" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; bad "cmake --install failed"; exit $fail; }
site="$tmp/prefix/lib/python3/dist-packages"
[ -f "$site/bufplan/_install_paths.py" ] || bad "no _install_paths.py in $site/bufplan"
cd "$tmp"   # away from the source tree, which would be found otherwise
got=$(env -u BUFPLAN_LIBRARY -u BUFPLAN_CLI PYTHONPATH="$site" "$PY" -c 'import bufplan; print(bufplan.library_path()); print(bufplan.cli_path())' 2>&1) \
  || bad "import of the installed package failed: $got"
case "$got" in *"$tmp/prefix/lib/libbufplan.so"*"$tmp/prefix/bin/bufplan"*) ;; *) bad "installed package found: $got";; esac
"$CLI" gen chain -o "$tmp/chain.json" >/dev/null || bad "gen failed"
want=$("$CLI" plan "$tmp/chain.json" 2>&1 | grep -v "plan time")
have=$(env -u BUFPLAN_LIBRARY -u BUFPLAN_CLI PYTHONPATH="$site" "$PY" -m bufplan plan "$tmp/chain.json" 2>&1 | grep -v "plan time")
[ "$want" = "$have" ] || bad "python3 -m bufplan plan differs from the binary: $have"
expect_msg 2 "usage" env -u BUFPLAN_CLI PYTHONPATH="$site" "$PY" -m bufplan
exit $fail
