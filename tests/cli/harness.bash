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
# expect_msg RC WORDS CMD...: run CMD (60 s at most), expect exit RC and the
# fixed string WORDS in what it printed (stdout and stderr)
expect_msg() {
  local rc=$1 words=$2 got=0; shift 2
  timeout 60 "$@" >"$tmp/expect.out" 2>&1 || got=$?
  [ "$got" = "$rc" ] || bad "$*: exit $got, expected $rc: $(cat "$tmp/expect.out")"
  grep -qF -- "$words" "$tmp/expect.out" || bad "$*: the message does not say '$words': $(cat "$tmp/expect.out")"
}
# onnx_python: PY = a python3 that imports onnx and numpy (Debian's first),
# or the script ends here with a SKIP line
onnx_python() {
  local p
  for p in /usr/bin/python3 python3; do "$p" -c "import onnx, numpy" 2>/dev/null && { PY=$p; return 0; }; done
  echo "SKIP: python3-onnx is not installed"; exit 0
}
# find_chrome WHAT: CHROME = a headless-capable Chromium, or the script ends
# here with "SKIP: ... WHAT" (and its failures so far); chrome_run ARGS runs
# it headless with a private profile (120 s at most, its log in $tmp)
find_chrome() {
  local c
  CHROME=""
  for c in chromium chromium-browser google-chrome; do command -v "$c" >/dev/null && { CHROME=$c; break; }; done
  [ -n "$CHROME" ] && return 0
  echo "SKIP: chromium is not installed (apt-get install chromium; make test-deps does it); $1"
  exit $fail
}
chrome_run() {
  timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --disable-dev-shm-usage --user-data-dir="$tmp/profile" "$@" 2>>"$tmp/chrome.log"
}
