#!/usr/bin/env bash
# The viewer end to end, headless: a phantom run (Colin27, motion, motor blocks) replayed by the simulator into
# `rtfmri run` (every stage, results on PUB), `rtfmri-view --connect --goto-roi` rendering under Xvfb until 12 TRs
# were shown, then check_snapshot.py on the picture: panels present, slices not blank, traces drawn, device reported,
# the feedback ROI's outline drawn over the slices (the crosshair on it), the server's live QA shown (traces, carpet,
# tSNR map, and with the run's design the CNR map, its p95 and the sliding-window tSNR median); then the recorded session through
# `rtfmri-view --replay`, checked the same way (every TR of the run shown).
# Nothing here depends on the machine's speed: the replay starts once the viewer says it is connected, and it runs in
# lockstep with the server (`--lockstep`: each volume after the previous one's feedback line), so every volume is
# analysed however busy the machine is. The waits are bounded only to turn a hang into a failure.
# Usage: viewer_snapshot_e2e.sh RTFMRI RTFMRI_VIEW DATA_DIR WORK_DIR   (exit 77: skipped, data or Xvfb missing)
set -euo pipefail
RTFMRI="$1"
VIEW="$2"
DATA="$3"
WORK="$4"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[[ -f "$DATA/mricron/ch2bet.nii.gz" && -f "$DATA/mricron/aal.nii.gz" ]] || { echo "skip: no Colin27/AAL in $DATA"; exit 77; }
command -v xvfb-run >/dev/null || { echo "skip: xvfb-run missing (scripts/setup.sh installs xvfb)"; exit 77; }
python3 "$HERE/check_snapshot.py" --self-test

rm -rf "$WORK"
mkdir -p "$WORK"
export RTFMRI_DATA_DIR="$DATA"
VOLUMES=30
"$RTFMRI" sim phantom --out "$WORK/phantom" --volumes "$VOLUMES" --tr 1 --block-on 6 --block-off 6 --psc 3 --seed 3 \
  >"$WORK/phantom.log" 2>&1
read -r INGEST PUB FEEDBACK < <(python3 -c '
import socket
s = [socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')

"$RTFMRI" run --session-dir "$WORK/session" --listen "tcp://127.0.0.1:$INGEST" \
  --results-pub "tcp://127.0.0.1:$PUB" --feedback-tcp "127.0.0.1:$FEEDBACK" --events "$WORK/phantom/events.tsv" \
  --volumes "$VOLUMES" --tr 1 --feedback-roi=-38,-24,56,8 --glm-window 10 --cca-window 10 --fsync none \
  --warm "$WORK/phantom/bold.nii.gz" --exit-after-runs 1 >"$WORK/server.log" 2>&1 &
SERVER=$!
VIEWER=""
cleanup() { kill "$SERVER" ${VIEWER:+"$VIEWER"} 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 1 6000); do  # the warm-up builds every kernel first (minutes on a cold PoCL cache)
  grep -q "results: ZeroMQ PUB" "$WORK/server.log" && break
  kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/server.log"; echo "FAIL: the server did not start"; exit 1; }
  sleep 0.1
done

xvfb-run -a -s "-screen 0 1600x1000x24" "$VIEW" --connect "tcp://127.0.0.1:$PUB" --snapshot "$WORK/view.png" \
  --after 12 --timeout 600 --goto-roi >"$WORK/viewer.log" 2>&1 &
VIEWER=$!
for _ in $(seq 1 1200); do
  grep -q "results: connected to" "$WORK/viewer.log" && break
  kill -0 "$VIEWER" 2>/dev/null || { cat "$WORK/viewer.log"; echo "FAIL: the viewer did not start"; exit 1; }
  sleep 0.1
done
grep -q "results: connected to" "$WORK/viewer.log" || { cat "$WORK/viewer.log"; echo "FAIL: the viewer never connected"; exit 1; }
"$RTFMRI" sim replay "$WORK/phantom/bold.nii.gz" --to "tcp://127.0.0.1:$INGEST" --speed 3 \
  --lockstep "127.0.0.1:$FEEDBACK" >"$WORK/replay.log" 2>&1 || { cat "$WORK/replay.log"; echo "FAIL: replay"; exit 1; }
if ! wait "$VIEWER"; then
  cat "$WORK/viewer.log"
  echo "FAIL: rtfmri-view did not write its snapshot"
  exit 1
fi
VIEWER=""
wait "$SERVER" || true
trap - EXIT
grep -q "${VOLUMES} analysed, 0 skipped" "$WORK/server.log" || { cat "$WORK/server.log"; echo "FAIL: the server skipped volumes"; exit 1; }
# --warm built every kernel before the server listened: the run's first volume compiled none.
grep -q "first volume took .* none compiled" "$WORK/server.log" ||
  { cat "$WORK/server.log"; echo "FAIL: the warm-up left kernels for the first volume to build"; exit 1; }
cat "$WORK/viewer.log"
python3 "$HERE/check_snapshot.py" "$WORK/view.png" --min-trs 12 --outlines --qa --cnr

# The recorded session, browsed without a server: every analysed TR, the run's volumes and final maps.
xvfb-run -a -s "-screen 0 1600x1000x24" "$VIEW" --replay "$WORK/session" --snapshot "$WORK/replay.png" --after 1 \
  --timeout 600 --follow-peak >"$WORK/viewer-replay.log" 2>&1 || { cat "$WORK/viewer-replay.log"; echo "FAIL: replay"; exit 1; }
cat "$WORK/viewer-replay.log"
python3 "$HERE/check_snapshot.py" "$WORK/replay.png" --min-trs "$VOLUMES" --replay
