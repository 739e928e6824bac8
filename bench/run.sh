#!/usr/bin/env bash
# bench/run.sh SUITE [--quick] [--json]
# Builds the release tree if needed and runs one suite (bench/suites/SUITE.sh),
# or every suite with "all".  Each suite prints its table (or JSON).
# The pool suite compares with jemalloc, mimalloc and tcmalloc: for it (and
# "all") the peers' packages are installed first when missing, as `make test`
# installs its dependencies (dpkg -s, then apt-get; BP_BENCH_INSTALL=0 skips
# it).  A peer that is still missing is named in the pool table's header.
# The ort suite installs its peer (onnxruntime-node, from npm) into the bench
# cache itself, and skips, saying so, where npm cannot reach it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
suite="${1:-}"
if [ -z "$suite" ] || [ "$suite" = "--help" ]; then
  echo "usage: bench/run.sh SUITE [--quick] [--json]"; echo "suites: all $(ls "$here/suites" | sed 's/\.sh$//' | tr '\n' ' ')"; exit 2
fi
shift
export BP_ROOT="$root"
export BP_BUILD="${BP_BUILD:-$root/build}"
export BP_DATA="${BP_DATA:-$root/../shared/data}"
PEER_DEPS="libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev"
# install_peers: installs the missing peer packages (a failure is reported,
# not fatal: the pool table then names the peers it lacks)
install_peers() {
  [ "${BP_BENCH_INSTALL:-1}" = 0 ] && return 0
  local missing="" p sudo=""
  for p in $PEER_DEPS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  [ -n "$missing" ] || return 0
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "installing the pool benchmark's peers:$missing"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing; } >&2 ||
    echo "bench: could not install$missing; the pool table names the peers it lacks" >&2
}
case "$suite" in pool|all) install_peers ;; esac
cmake -S "$root" -B "$BP_BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BP_BUILD" -j "$(nproc)" >/dev/null
if [ "$suite" = all ]; then
  for s in "$here"/suites/*.sh; do echo "== $(basename "$s" .sh)"; bash "$s" "$@"; done
else
  [ -f "$here/suites/$suite.sh" ] || { echo "no suite $suite"; exit 2; }
  bash "$here/suites/$suite.sh" "$@"
fi
