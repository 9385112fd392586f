#!/usr/bin/env bash
# The README's demo command: the live demo. Installs what is missing, builds rtfmri, then
#   1. makes a synthetic BOLD run with the simulator (Colin27 head, realistic motion, a 10 s on/off block design that
#      activates the motor cortex; RTF_DEMO_VOLUMES volumes, TR 1 s),
#   2. starts the live server (`rtfmri run`) with every stage on and the feedback ROI on the left motor cortex,
#   3. connects the example stimulus-side client (examples/feedback_client.py) to the feedback port,
#   4. replays the run into the server like a scanner, at RTF_DEMO_SPEED x real time,
# and prints each TR's feedback value and motion as the client receives them, then the server's latency summary.
# The session directory (recorded volumes, motion.tsv, feedback.tsv, the final t, CCA and seed maps as NIfTI,
# latency.jsonl) is left in ${RTF_DEMO_OUT:-demo-out}/session. Any OpenCL device works: the GPU if present, else PoCL.
# RTFMRI_BIN=/path/to/rtfmri skips set-up and build (a prebuilt binary; data from RTFMRI_DATA_DIR).
# RTF_DEMO_VIEW=1 also opens the live viewer (rtfmri-view) on the run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RTF_BUILD_DIR:-$ROOT/build}"
OUT="${RTF_DEMO_OUT:-$ROOT/demo-out}"
VOLUMES="${RTF_DEMO_VOLUMES:-80}"
SPEED="${RTF_DEMO_SPEED:-2}"

if [[ -n "${RTFMRI_BIN:-}" ]]; then
  # A prebuilt rtfmri (e.g. a bundle on a machine without a package registry; data from RTFMRI_DATA_DIR): no set-up.
  RTFMRI="$RTFMRI_BIN"
else
  mkdir -p "$BUILD"
  bash "$ROOT/scripts/prepare.sh" "$BUILD"  # the same configuration as scripts/test.sh: nothing is compiled twice
  cmake --build "$BUILD" -j "$(nproc)" --target rtfmri
  if [[ "${RTF_DEMO_VIEW:-0}" == 1 ]]; then cmake --build "$BUILD" -j "$(nproc)" --target rtfmri-view || true; fi
  RTFMRI="$BUILD/cli/rtfmri"
fi
rm -rf "$OUT"
mkdir -p "$OUT"

# Free loopback ports for the three sockets (the defaults may be taken on a shared machine).
read -r INGEST_PORT FEEDBACK_PORT PUB_PORT < <(python3 - <<'PY'
import socket
ports = []
sockets = []
for _ in range(3):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    sockets.append(s)
    ports.append(s.getsockname()[1])
print(*ports)
PY
)

echo "== OpenCL devices"
"$RTFMRI" devices
echo "== 1. simulator: a phantom run with known motion and activation"
"$RTFMRI" sim phantom --out "$OUT/phantom" --volumes "$VOLUMES" --tr 1 --block-on 10 --block-off 10 --psc 3 --seed 7

echo "== 2. live server (it first builds every kernel for the run's grid: --warm; minutes on a cold CPU cache)"
"$RTFMRI" run --session-dir "$OUT/session" --listen "tcp://127.0.0.1:$INGEST_PORT" \
  --feedback-tcp "127.0.0.1:$FEEDBACK_PORT" --results-pub "tcp://127.0.0.1:$PUB_PORT" \
  --events "$OUT/phantom/events.tsv" --volumes "$VOLUMES" --tr 1 --feedback-roi=-38,-24,56,8 \
  --warm "$OUT/phantom/bold.nii.gz" --exit-after-runs 1 >"$OUT/server.log" 2>&1 &
SERVER=$!
cleanup() { kill "$SERVER" "${CLIENT:-}" 2>/dev/null || true; }
trap cleanup EXIT
# wait_for_log PATTERN: until the server logs it (bounded only to turn a hang into an error).
wait_for_log() {
  for _ in $(seq 1 6000); do
    grep -q "$1" "$OUT/server.log" 2>/dev/null && return 0
    kill -0 "$SERVER" 2>/dev/null || { cat "$OUT/server.log"; echo "demo: the server stopped" >&2; exit 1; }
    sleep 0.1
  done
  cat "$OUT/server.log"
  echo "demo: the server never logged '$1'" >&2
  exit 1
}
wait_for_log "feedback: TCP lines"
grep -E "device|warm-up|listening|results|feedback" "$OUT/server.log" | sed 's/^/   server: /'

if [[ "${RTF_DEMO_VIEW:-0}" == 1 ]]; then
  VIEW="${RTFMRI_VIEW_BIN:-$BUILD/viewer/rtfmri-view}"
  if [[ -x "$VIEW" ]]; then
    echo "== viewer: $VIEW --connect tcp://127.0.0.1:$PUB_PORT (close its window when done)"
    "$VIEW" --connect "tcp://127.0.0.1:$PUB_PORT" --follow-peak >"$OUT/viewer.log" 2>&1 &
  else
    echo "demo: rtfmri-view was not built (docs/viewer.md); continuing without it" >&2
  fi
fi

echo "== 3. stimulus-side client (examples/feedback_client.py): one line per TR"
python3 "$ROOT/examples/feedback_client.py" --port "$FEEDBACK_PORT" --retry 0.2 2>/dev/null &
CLIENT=$!
wait_for_log "feedback TCP: client connected"

echo "== 4. scanner: replaying the run at ${SPEED}x real time (TR 1 s)"
"$RTFMRI" sim replay "$OUT/phantom/bold.nii.gz" --to "tcp://127.0.0.1:$INGEST_PORT" --speed "$SPEED" \
  >"$OUT/replay.log" 2>&1
wait "$SERVER"
kill "$CLIENT" 2>/dev/null || true
trap - EXIT

echo "== server summary"
sed -n '/^ingest:/,$p' "$OUT/server.log"
echo "== outputs in $OUT/session/runs/run-01"
ls "$OUT/session/runs/run-01"
echo "demo: feedback.tsv and motion.tsv hold every analysed TR; glm_cumulative_task_t.nii.gz and cca.nii.gz are the"
echo "      run's final maps, connectivity_cumulative_r.tsv its AAL matrix; ../../latency*.json* the per-stage latencies."
