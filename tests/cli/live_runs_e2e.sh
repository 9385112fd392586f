#!/usr/bin/env bash
# Several runs at once into one live server, with the real binaries (docs/live.md, "Several runs at once"):
#   1. two `rtfmri sim replay` of two phantoms (different motion and noise) at the same time, as runs twoA and twoB:
#      each run's motion.tsv and feedback.tsv equal a replay of that run alone (`rtfmri replay --run`), and its motion
#      is not zero (the failure this guards against: a pipeline rebuilt on every change of run, motion rows all 0);
#   2. a run `scan` with a flood of other runs' volumes beside it (eight senders as fast as the server ACKs, started
#      after scan's first line): scan is analysed exactly as alone; the flood's runs beyond max_live_runs are recorded
#      only, their clients get "recorded-only" lines, and the summary names them.
# Paced by the server's progress: each scanner-like sender waits for its previous volume's feedback line
# (--lockstep), so no volume of an analysed run is skipped on any machine.
#   usage: live_runs_e2e.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
if [[ ! -f "$DATA/mricron/ch2bet.nii.gz" || ! -f "$DATA/mricron/aal.nii.gz" ]]; then
  echo "SKIP: $DATA/mricron/ch2bet.nii.gz or aal.nii.gz missing (run scripts/fetch-data.sh)"
  exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"  # wait_for, PIDS, die
export RTFMRI_DATA_DIR="$DATA"
VOLUMES=16
for seed in 3 4; do
  "$RTFMRI" sim phantom --out "$WORK/phantom$seed" --template "$DATA/mricron/ch2bet.nii.gz" --grid 32x38x28 --voxel 5 \
    --volumes $VOLUMES --tr 1 --block-on 4 --block-off 4 --psc 4 --max-translation 1.5 --max-rotation 1.5 \
    --seed $seed >"$WORK/phantom$seed.log" 2>&1 || die "sim phantom (seed $seed)"
done
PIPELINE=(--events "$WORK/phantom3/events.tsv" --volumes $VOLUMES --tr 1 --feedback-roi=-38,-24,56,10 --glm-window 8
  --cca-window 8 --ring 32)

# start_server LOG NAME EXIT_AFTER: a server on free ports recording into WORK/session_NAME; sets INGEST, FEEDBACK,
# SERVER.
start_server() {
  read -r INGEST FEEDBACK < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
  "$RTFMRI" run --session-dir "$WORK/session_$2" --listen "tcp://127.0.0.1:$INGEST" --results-pub '' \
    --feedback-tcp "127.0.0.1:$FEEDBACK" "${PIPELINE[@]}" --fsync none --warm "$WORK/phantom3/bold.nii.gz" \
    --exit-after-runs "$3" >"$1" 2>&1 &
  SERVER=$!
  PIDS+=("$SERVER")
  started() { grep -q "listening on" "$1" || ! kill -0 "$SERVER" 2>/dev/null; }
  wait_for 900 started "$1" && grep -q "listening on" "$1" || die "the server did not start"  # --warm: kernels first
}
send() {  # send FILE RUN LOG [extra args]: a lockstep sender in the background; sets SENDER
  local file=$1 run=$2 log=$3
  shift 3
  "$RTFMRI" sim replay "$file" --to "tcp://127.0.0.1:$INGEST" --speed 0 --session e2e --run "$run" \
    --lockstep "127.0.0.1:$FEEDBACK" "$@" >"$log" 2>&1 &
  SENDER=$!
  PIDS+=("$SENDER")
}
# same_tsv A B: two tsv files agree, numbers within 1e-6 relative, text exactly; prints the rows compared.
same_tsv() {
  python3 - "$1" "$2" <<'PY'
import sys
a = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
b = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])]
assert len(a) == len(b) and len(a) > 1, f"{len(a)} rows against {len(b)}"
for r, (x, y) in enumerate(zip(a, b)):
    assert len(x) == len(y), f"row {r}: {len(x)} fields against {len(y)}"
    for c, (u, v) in enumerate(zip(x, y)):
        try:
            fu, fv = float(u), float(v)
        except ValueError:
            assert u == v, f"row {r} column {c}: {u!r} against {v!r}"
            continue
        assert fu == fv or abs(fu - fv) <= 1e-6 * max(abs(fu), 1.0), f"row {r} column {c}: {u} against {v}"
print(f"{len(a) - 1} rows equal")
PY
}
# replay_alone SESSION RUN: the run replayed alone into SESSION/alone.
replay_alone() {
  "$RTFMRI" replay "$1" --out "$1/alone" --run "$2" "${PIPELINE[@]}" --results-pub '' --feedback-tcp '' \
    >"$WORK/replay_$2.log" 2>&1 || die "replay of run $2"
}

# 1. Two runs at once.
start_server "$WORK/server_two.log" two 2
send "$WORK/phantom3/bold.nii.gz" twoA "$WORK/sender_twoA.log"
A=$SENDER
send "$WORK/phantom4/bold.nii.gz" twoB "$WORK/sender_twoB.log"
B=$SENDER
wait "$A" || die "sender twoA"
wait "$B" || die "sender twoB"
wait "$SERVER" || die "the server exited with an error"
grep -q "$((2 * VOLUMES)) analysed, 0 skipped" "$WORK/server_two.log" || die "not every volume of both runs was analysed"
grep -q "twoB: analysed beside 1 other run\|twoA: analysed beside 1 other run" "$WORK/server_two.log" ||
  die "the two runs were not analysed at the same time (nothing was tested)"
for run in twoA twoB; do
  replay_alone "$WORK/session_two" $run
  for file in motion.tsv feedback.tsv; do
    out=$(same_tsv "$WORK/session_two/runs/$run/$file" "$WORK/session_two/alone/runs/$run/$file" 2>&1) ||
      die "run $run: $file differs from the run alone: $out"
    echo "ok: run $run $file equals the run alone ($out)"
  done
  python3 - "$WORK/session_two/runs/$run/motion.tsv" <<'PY' || die "run $run: the motion is all zero"
import sys
rows = [l.split("\t") for l in open(sys.argv[1])][1:]
moved = max(abs(float(v)) for r in rows for v in r[3:9])  # trans_x_mm ... rot_z_deg
assert moved > 0.2, f"largest motion parameter {moved}"
print(f"ok: largest motion parameter {moved:.2f}")
PY
done

# 2. A run beside a flood of other runs.
start_server "$WORK/server_flood.log" flood 1
send "$WORK/phantom3/bold.nii.gz" scan "$WORK/sender_scan.log"
SCAN=$SENDER
wait_for 300 grep -q "run scan.*first volume took" "$WORK/server_flood.log" || die "scan's first volume was not analysed"
FLOOD=()
for i in $(seq 1 8); do
  "$RTFMRI" sim replay "$WORK/phantom4/bold.nii.gz" --to "tcp://127.0.0.1:$INGEST" --speed 0 --session e2e \
    --run "flood$i" --no-end-of-run >"$WORK/flood$i.log" 2>&1 &
  FLOOD+=($!)
  PIDS+=($!)
done
wait "$SCAN" || die "sender scan"
wait "$SERVER" || die "the server exited with an error"
for p in "${FLOOD[@]}"; do kill -9 "$p" 2>/dev/null; done
not_analysed=$(grep -c "volumes recorded but not analysed live" "$WORK/server_flood.log")
[[ $not_analysed -ge 1 ]] || die "no flood run was reported as recorded only"
grep -q "max_live_runs 2" "$WORK/server_flood.log" || die "the reason does not name max_live_runs"
echo "ok: $not_analysed flood runs reported as recorded but not analysed live"
replay_alone "$WORK/session_flood" scan
for file in motion.tsv feedback.tsv; do
  out=$(same_tsv "$WORK/session_flood/runs/scan/$file" "$WORK/session_flood/alone/runs/scan/$file" 2>&1) ||
    die "run scan: $file differs from the run alone: $out"
  echo "ok: run scan beside the flood: $file equals the run alone ($out)"
done
echo "all live-runs checks passed"
