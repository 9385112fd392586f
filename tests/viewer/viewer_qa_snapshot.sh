#!/usr/bin/env bash
# The QA panel headless, without a server: qa_publisher.py publishes synthetic results with the QA stage's fields
# (docs/protocol.md §8) and `rtfmri-view --connect --snapshot` renders them under Xvfb; check_snapshot.py --qa then
# checks the picture (every panel, the QA traces and carpet drawn, the tSNR map in colour, the CNR map beside it in hot
# and cool colours, the sliding-window tSNR median and CNR p95 received, the alarms counted). The
# same messages without QA: the viewer still shows every other panel and its QA panel saw no QA.
# Usage: viewer_qa_snapshot.sh RTFMRI_VIEW WORK_DIR   (exit 77: skipped, Xvfb or libzmq.so.5 missing)
set -euo pipefail
VIEW="$1"
WORK="$2"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v xvfb-run >/dev/null || { echo "skip: xvfb-run missing (scripts/setup.sh installs xvfb)"; exit 77; }
python3 -c 'import ctypes; ctypes.CDLL("libzmq.so.5")' 2>/dev/null || { echo "skip: libzmq.so.5 missing"; exit 77; }
rm -rf "$WORK"
mkdir -p "$WORK"
PUBLISHER=""
trap '[[ -n "$PUBLISHER" ]] && kill "$PUBLISHER" 2>/dev/null || true' EXIT

for MODE in qa no-qa; do
  PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  EXTRA=()
  [[ "$MODE" == no-qa ]] && EXTRA=(--no-qa)
  # Runs of 40 volumes at 20 a second, round and round: the viewer needs 30 of one run whenever it connects.
  python3 "$HERE/qa_publisher.py" "tcp://127.0.0.1:$PORT" --volumes 40 --rate 20 --seconds 300 "${EXTRA[@]}" &
  PUBLISHER=$!
  if ! xvfb-run -a -s "-screen 0 1600x1000x24" "$VIEW" --connect "tcp://127.0.0.1:$PORT" --snapshot "$WORK/$MODE.png" \
      --after 30 --timeout 240 >"$WORK/$MODE.log" 2>&1; then
    cat "$WORK/$MODE.log"
    echo "FAIL: rtfmri-view did not write its snapshot ($MODE)"
    exit 1
  fi
  kill "$PUBLISHER" 2>/dev/null || true
  wait "$PUBLISHER" 2>/dev/null || true
  PUBLISHER=""
  cat "$WORK/$MODE.log"
done
python3 "$HERE/check_snapshot.py" "$WORK/qa.png" --min-trs 30 --qa --cnr
python3 "$HERE/check_snapshot.py" "$WORK/no-qa.png" --min-trs 30
python3 - "$WORK/no-qa.png.json" <<'PY'
import json, sys
qa = json.load(open(sys.argv[1]))["qa"]
if qa["seen"] or qa["samples"]:
    sys.exit(f"FAIL: QA shown for a stream without it: {qa}")
print("viewer_qa_snapshot: without QA in the stream the panel says QA off")
PY
