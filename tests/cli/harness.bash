# Sourced by the CLI test scripts (tests/cli/*.sh; this file is not a test
# itself): the CLI under test, a temporary directory removed at exit, and
# bad(), which reports a failure and makes the script end with exit 1
# (each script ends with `exit $fail`).
set -u
CLI=${BP_CLI:?BP_CLI is not set}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
