#!/usr/bin/env bash
# `tessel-bench trace` refuses flags of another mode, naming them, instead of ignoring them:
# a steady state takes neither --repeat nor --time-scale, --horizon/--warmup/--duration-cap
# need --steady, and an event list takes none of the openb arrival flags.
# Usage: cli_test.sh TESSEL_BENCH ROOT
set -uo pipefail
bench="$1"
root="$2"
nodes="$root/bench/data/openb/openb_node_list_gpu_node.csv"
pods="$root/bench/data/openb/openb_pod_list_default.csv"
events="$root/bench/scenarios/org/org-late-team.json"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
failed=0

refused() {  # refused WANT_TEXT ARGS...: exit status 2 and WANT_TEXT on stderr, nothing written
  local want="$1"; shift
  local err rc
  err=$("$bench" trace "$@" --out "$out/run" 2>&1 >/dev/null); rc=$?
  if [[ $rc -ne 2 || "$err" != *"$want"* || -e "$out/run" ]]; then
    echo "FAIL: tessel-bench trace $*: exit $rc, stderr: $err" >&2
    failed=1
  fi
}

refused "--steady takes --nodes with --pods, and neither --repeat nor --time-scale" \
  --nodes "$nodes" --pods "$pods" --steady --repeat 2
refused "--steady takes --nodes with --pods, and neither --repeat nor --time-scale" \
  --nodes "$nodes" --pods "$pods" --steady --time-scale 4
refused "--steady takes --nodes with --pods" --events "$events" --steady
refused "--horizon, --warmup and --duration-cap apply only with --steady" \
  --nodes "$nodes" --pods "$pods" --warmup 60
refused "--repeat, --time-scale and --load apply to --nodes with --pods, not to --events" \
  --events "$events" --load 0.5
exit $failed
