#!/usr/bin/env bash
# bench/run.sh concat [--quick] — Concat in place: every model under
# shared/data and every generated graph planned without and with
# concat_inplace (default options; --quick: the kahn scheduler), a Markdown
# table of the Concat-bearing ones; exits 1 if concat_inplace ever gives a
# higher arena or a plan fails to verify.
set -euo pipefail
"$BP_BUILD/bench/bench_concat" "$BP_DATA" "$@"
