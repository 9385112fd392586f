#!/usr/bin/env bash
# Bounded descriptors of the live server with the real binaries: `rtfmri run --no-device` under `ulimit -n 64` takes
# one volume each of 60 runs left open (no END_OF_RUN), each from its own `rtfmri sim replay`, and ACKs every one
# (when each open run kept its two files open until the server stopped, the 25th or so run was NACKed invalid_field
# "Too many open files"): with the default --max-open-runs (lowered to fit the limit, with a warning) and with
# --max-open-runs 1000. The server's descriptors (/proc/PID/fd) grow by no more than the bound allows, and no NACK is
# logged.
#   usage: ingest_descriptors_e2e.sh RTFMRI WORK_DIR
set -uo pipefail
RTFMRI=$1
WORK=$2
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=check_lib.sh
source "$HERE/check_lib.sh"  # wait_for
RUNS=60
LIMIT=64
rm -rf "$WORK" && mkdir -p "$WORK"
SERVER_PID=""
cleanup() { [[ -n "$SERVER_PID" ]] && kill -9 "$SERVER_PID" 2>/dev/null; }
trap cleanup EXIT
die() {
  echo "FAIL: $*"
  for f in "$WORK"/*.log; do echo "--- $f"; tail -15 "$f"; done
  exit 1
}
listening() { grep -q "listening on" "$1"; }
descriptors() { ls "/proc/$1/fd" | wc -l; }

python3 "$HERE/nifti_stdlib.py" write "$WORK/one.nii" --dims 6 5 4 1 --seed 7 --tr 2 || die "cannot write the input"

check() {  # $1: name, the rest: extra server flags
  local name=$1
  shift
  local log="$WORK/server_$name.log"
  (
    ulimit -n $LIMIT
    exec "$RTFMRI" run --no-device --listen "tcp://127.0.0.1:*" --session-dir "$WORK/session_$name" --fsync none "$@"
  ) >"$log" 2>&1 &
  SERVER_PID=$!
  wait_for 120 listening "$log" || die "$name: the server did not start"
  local endpoint
  endpoint=$(sed -n 's/.*listening on \(tcp:[^ ]*\).*/\1/p' "$log" | head -1)
  local before
  before=$(descriptors "$SERVER_PID")
  for ((r = 0; r < RUNS; r++)); do
    "$RTFMRI" sim replay "$WORK/one.nii" --to "$endpoint" --speed 0 --tr 2 --session s1 --run "run-$r" --no-end-of-run \
      --resend-timeout 30 --finish-timeout 120 >"$WORK/replay_$name.log" 2>&1 || die "$name: run-$r not acknowledged"
  done
  local after
  after=$(descriptors "$SERVER_PID")
  local bound
  bound=$(sed -n 's/.*max_open_runs [0-9]* lowered to \([0-9]*\).*/\1/p' "$log" | head -1)
  [[ -n "$bound" ]] || die "$name: no warning that max_open_runs was lowered to fit ulimit -n $LIMIT"
  # Two files per open run; a replay's connection may not be closed yet when counted.
  ((after - before <= 2 * bound + 2)) || die "$name: $before descriptors before the runs, $after after (bound $bound)"
  kill -TERM "$SERVER_PID"
  wait "$SERVER_PID" || die "$name: the server failed at shutdown"
  SERVER_PID=""
  grep -q "NACK volume" "$log" && die "$name: volumes were NACKed"
  grep -q "$RUNS volumes recorded, 0 duplicates, 0 NACKs" "$log" || die "$name: the summary is not $RUNS volumes, 0 NACKs"
  local journals
  journals=$(ls "$WORK/session_$name"/runs/*/journal.jsonl | wc -l)
  ((journals == RUNS)) || die "$name: $journals runs journaled of $RUNS"
  echo "ok: $name: $RUNS runs left open, all ACKed under ulimit -n $LIMIT; bound $bound, descriptors $before -> $after"
}

check default
check too_high --max-open-runs 1000
