#!/usr/bin/env bash
# End-to-end crash test of the ingest path with the real binaries: `rtfmri sim replay` streams real BOLD (nitime's
# fmri1) to `rtfmri run`; the server is killed with SIGKILL mid-run; `rtfmri recover` must then find every volume the
# sender had seen acknowledged; a restarted server on the same session directory takes the sender's resends and the
# run closes with every volume recorded exactly once.
#   usage: ingest_crash_e2e.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
BOLD="$DATA/nitime/fmri1.nii.gz"
if [[ ! -f "$BOLD" ]]; then
  echo "SKIP: $BOLD missing (run scripts/fetch-data.sh)"
  exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK"
SESSION="$WORK/session"
SERVER_PID=""
REPLAY_PID=""
cleanup() {
  [[ -n "$SERVER_PID" ]] && kill -9 "$SERVER_PID" 2>/dev/null
  [[ -n "$REPLAY_PID" ]] && kill -9 "$REPLAY_PID" 2>/dev/null
}
trap cleanup EXIT
die() {
  echo "FAIL: $*"
  for f in "$WORK"/*.log; do echo "--- $f"; tail -20 "$f"; done
  exit 1
}
# wait_for SECONDS CONDITION... (a generous bound: it only turns a hang into a failure)
# shellcheck source=check_lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/check_lib.sh"

start_server() {  # $1: endpoint, $2: log
  "$RTFMRI" run --listen "$1" --session-dir "$SESSION" --ring 8 --exit-after-runs 1 >"$2" 2>&1 &
  SERVER_PID=$!
}
listening() { grep -q "listening on" "$1"; }

start_server "tcp://127.0.0.1:*" "$WORK/server1.log"
wait_for 120 listening "$WORK/server1.log" || die "server did not start"
ENDPOINT=$(sed -n 's/.*listening on \(tcp:[^ ]*\).*/\1/p' "$WORK/server1.log" | head -1)
echo "server on $ENDPOINT"

# 40 volumes at 4x real time (TR 1.35 s -> one every 0.34 s): the server is killed after 10 ACKs, so the script may be
# held up for 10 s on a busy machine before the run could finish without it. The sender gives a volume up after 20
# silent resend timeouts (60 s here), far longer than a restart takes even on a loaded machine.
"$RTFMRI" sim replay "$BOLD" --to "$ENDPOINT" --speed 4 --session crash --run run-01 --resend-timeout 3 \
  --finish-timeout 300 --ack-log "$WORK/acks.txt" >"$WORK/replay.log" 2>&1 &
REPLAY_PID=$!
acked_enough() { [[ -f "$WORK/acks.txt" && $(wc -l <"$WORK/acks.txt") -ge 10 ]]; }
wait_for 120 acked_enough || die "no ACKs arrived"
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
SERVER_PID=""
sleep 0.3  # no ACK can arrive now; let the sender write what it had
cp "$WORK/acks.txt" "$WORK/acks_at_kill.txt"
ACKED=$(wc -l <"$WORK/acks_at_kill.txt")
echo "server killed after $ACKED acknowledged volumes"
[[ "$ACKED" -lt 40 ]] || die "the run finished before the kill; nothing was tested"

"$RTFMRI" recover "$SESSION" >"$WORK/recover1.log" 2>&1 || die "recover after the crash failed"
JOURNAL="$SESSION/runs/run-01/journal.jsonl"
lost=0
while read -r run index; do
  grep -q "\"index\":$index," "$JOURNAL" || { echo "acknowledged volume $index is not in the journal"; lost=$((lost + 1)); }
done <"$WORK/acks_at_kill.txt"
[[ $lost -eq 0 ]] || die "$lost acknowledged volumes lost"
echo "ok: all $ACKED acknowledged volumes recovered after SIGKILL ($(grep -c '"index"' "$JOURNAL") journaled)"

start_server "$ENDPOINT" "$WORK/server2.log"
wait_for 120 listening "$WORK/server2.log" || die "restarted server did not start"
wait "$REPLAY_PID"
rc=$?
REPLAY_PID=""
[[ $rc -eq 0 ]] || die "replay did not complete after the restart (rc=$rc)"
wait_for 120 bash -c "! kill -0 $SERVER_PID 2>/dev/null" || die "server did not stop after the run closed"
wait "$SERVER_PID"
rc=$?
SERVER_PID=""
[[ $rc -eq 0 ]] || die "restarted server exited with $rc"

entries=$(grep -c '"index"' "$JOURNAL")
unique=$(grep -o '"index":[0-9]*' "$JOURNAL" | sort -u | wc -l)
[[ $entries -eq 40 && $unique -eq 40 ]] || die "journal has $entries entries, $unique distinct; want 40 and 40"
grep -q '"end_of_run":true' "$JOURNAL" || die "run not ended in the journal"
"$RTFMRI" info "$SESSION/runs/run-01/bold.nii.gz" | grep -q '10 x 10 x 18 x 40' || die "bold.nii.gz is not 10x10x18x40"
echo "ok: run closed after the restart with 40 of 40 volumes, each recorded once"
