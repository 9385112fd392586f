#!/usr/bin/env bash
# The live QA stage end to end with the real binaries (docs/algorithms/qa.md, "Live"): a phantom moved by a known
# trajectory (a 1 mm step every 5th volume, still between: FD 1 mm at those volumes, ~0 elsewhere) with a spike injected
# into one slice of one volume, streamed by `rtfmri sim replay --lockstep` into `rtfmri run`, and a second TCP client
# recording the feedback lines. Checked:
#   - every feedback line after the first carries the previous volume's `qa` (its volume = this one - 1);
#   - FIRMM's tally in the last line is exact against the live FD (runs/<run>/motion.tsv) and its prediction is
#     (target - usable) x elapsed / usable; the FD alarm fires once per crossing, within two volumes of each true step;
#   - the spike raises one slice_z alarm naming its slice, in the feedback line after its volume and in the log, and an
#     an outlier fraction over the alarm's 0.05 at that volume; outlier alarms only at the spike or the steps (motion
#     correction's residue);
#   - runs/<run>/ has qa.tsv (one row a volume, the spike's slice flagged at its volume only), qa.json (MRIQC's names),
#     the maps and qa_report.html, which opens in headless Chromium with every image loaded and every table filled;
#   - a third run, a still phantom with the same block design (5 s on, 5 s off, 6%): the CNR map of the design's
#     contrast (qa_cnr.nii.gz) is higher in the phantom's active voxels (median) than the 95th percentile of its mask;
#   - a second run that ends after one volume gets its files and a report that passes the same check.
# Paced by the server's progress (--lockstep), never by the clock.
#   usage: qa_live_e2e.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ ! -f "$DATA/mricron/ch2bet.nii.gz" ]]; then
  echo "SKIP: $DATA/mricron/ch2bet.nii.gz missing (run scripts/fetch-data.sh)"
  exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$HERE/check_lib.sh"  # wait_for, PIDS, die
export RTFMRI_DATA_DIR="$DATA"
VOLUMES=30
SPIKE_VOLUME=17
SPIKE_SLICE=14
/usr/bin/python3 - "$WORK/motion.tsv" $VOLUMES <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    f.write("volume\ttrans_x_mm\ttrans_y_mm\ttrans_z_mm\trot_x_deg\trot_y_deg\trot_z_deg\n")
    for t in range(n):
        f.write(f"{t}\t{float(t // 5):.6f}\t0\t0\t0\t0\t0\n")
PY
"$RTFMRI" sim phantom --out "$WORK/phantom" --template "$DATA/mricron/ch2bet.nii.gz" --grid 32x38x28 --voxel 5 \
  --volumes $VOLUMES --tr 1 --motion-file "$WORK/motion.tsv" --block-on 5 --block-off 5 --seed 5 \
  >"$WORK/phantom.log" 2>&1 || die "sim phantom"
"$RTFMRI" sim phantom --out "$WORK/still" --template "$DATA/mricron/ch2bet.nii.gz" --grid 32x38x28 --voxel 5 \
  --volumes $VOLUMES --tr 1 --motion none --block-on 5 --block-off 5 --psc 6 --seed 6 >"$WORK/still.log" 2>&1 ||
  die "sim phantom (still)"
/usr/bin/python3 "$HERE/qa_artefacts.py" "$WORK/phantom/bold.nii.gz" "$WORK/spiked.nii.gz" \
  "$SPIKE_VOLUME:$SPIKE_SLICE:1.6" >"$WORK/artefacts.log" 2>&1 || die "injecting the spike"

read -r INGEST FEEDBACK < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
cat >"$WORK/session.toml" <<TOML
[qa]
target_minutes = 1.0
alarm_fd_mm = 0.5
alarm_outlier_fraction = 0.05
TOML
"$RTFMRI" run --config "$WORK/session.toml" --session-dir "$WORK/session" --listen "tcp://127.0.0.1:$INGEST" \
  --results-pub '' --feedback-tcp "127.0.0.1:$FEEDBACK" --fsync none --tr 1 --ring 64 --atlas '' \
  --events "$WORK/phantom/events.tsv" --volumes $VOLUMES --glm-window 10 --cca-window 10 \
  --warm "$WORK/spiked.nii.gz" --exit-after-runs 3 >"$WORK/server.log" 2>&1 &
SERVER=$!
PIDS+=("$SERVER")
started() { grep -q "listening on" "$WORK/server.log" || ! kill -0 "$SERVER" 2>/dev/null; }
wait_for 900 started && grep -q "listening on" "$WORK/server.log" || die "the server did not start"
# The recording client: connected before the first volume is sent.
/usr/bin/python3 "$HERE/record_feedback_lines.py" "$FEEDBACK" "$WORK/lines.jsonl" "$WORK/client.ready" $VOLUMES \
  >"$WORK/client.log" 2>&1 &
CLIENT=$!
PIDS+=("$CLIENT")
client_ready() { [[ -f "$WORK/client.ready" ]] || ! kill -0 "$CLIENT" 2>/dev/null; }
wait_for 120 client_ready && [[ -f "$WORK/client.ready" ]] || die "the recording client did not connect"
"$RTFMRI" sim replay "$WORK/spiked.nii.gz" --to "tcp://127.0.0.1:$INGEST" --speed 0 --session qa --run qa1 \
  --lockstep "127.0.0.1:$FEEDBACK" >"$WORK/sender.log" 2>&1 || die "the sender failed"
wait "$CLIENT" || die "the recording client failed"
# A run that ends after one volume still gets its files and report.
"$RTFMRI" sim replay "$WORK/spiked.nii.gz" --to "tcp://127.0.0.1:$INGEST" --speed 0 --session qa --run one \
  --count 1 --lockstep "127.0.0.1:$FEEDBACK" >"$WORK/sender_one.log" 2>&1 || die "the one-volume sender failed"
"$RTFMRI" sim replay "$WORK/still/bold.nii.gz" --to "tcp://127.0.0.1:$INGEST" --speed 0 --session qa --run still \
  --lockstep "127.0.0.1:$FEEDBACK" >"$WORK/sender_still.log" 2>&1 || die "the still phantom's sender failed"
wait "$SERVER" || die "the server exited with an error"

/usr/bin/python3 - "$WORK" $VOLUMES $SPIKE_VOLUME $SPIKE_SLICE "$HERE" <<'PY' || die "the checks above"
import json, math, sys
work, n, spike, spike_slice = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
lines = [json.loads(l) for l in open(f"{work}/lines.jsonl")]
assert len(lines) == n, f"{len(lines)} feedback lines for {n} volumes"
for line in lines:
    v = line["volume"]
    if v == 0:
        assert "qa" not in line, "volume 0's line has no QA before it"
        continue
    assert line["qa"]["volume"] == v - 1, f"line {v} carries the QA of volume {line['qa']['volume']}"
alarms = [(a["metric"], a["volume"], a["where"]) for l in lines for a in l.get("qa_alarm", [])]
print("alarms in the feedback lines:", alarms)
slice_alarms = [a for a in alarms if a[0] == "slice_z"]
assert slice_alarms == [("slice_z", spike, f"slice {spike_slice}")], slice_alarms
# FD comes from the live motion estimates (runs/<run>/motion.tsv): the alarms fall where its FD first crosses 0.5 mm,
# each within two volumes of a true step (a registration that does not converge keeps the previous estimate until one
# that does), and the tally is exact against those FDs.
run = f"{work}/session/runs/qa1"
motion = [l.rstrip("\n").split("\t") for l in open(f"{run}/motion.tsv")]
fd = [float(r[1]) for r in motion[1:]]
assert len(fd) == n, f"{len(fd)} motion rows"
want_fd_alarms = [t for t in range(n - 1) if fd[t] > 0.5 and (t == 0 or fd[t - 1] <= 0.5)]
fd_alarms = sorted(a[1] for a in alarms if a[0] == "fd_mm")
assert fd_alarms == want_fd_alarms, (fd_alarms, want_fd_alarms)
steps = [5, 10, 15, 20, 25]
assert all(any(0 <= t - s <= 2 for s in steps) for t in fd_alarms), fd_alarms
assert len(fd_alarms) >= 4, f"only {len(fd_alarms)} of the 5 steps seen"
outlier_alarms = [a[1] for a in alarms if a[0] == "outlier_fraction"]
assert all(t == spike or any(0 <= t - s <= 2 for s in steps) for t in outlier_alarms), outlier_alarms
# FIRMM's tally of the last line (the QA of volume n - 2: n - 1 frames so far), FD rule "keep FD < threshold".
qa = lines[-1]["qa"]
frames = n - 1
for u in qa["usable"]:
    kept = sum(1 for t in range(frames) if fd[t] < u["fd_threshold_mm"])
    assert u["frames"] == kept, (u, kept)
    usable_min, elapsed_min = kept / 60.0, frames / 60.0
    want = max(0.0, (1.0 - usable_min) * elapsed_min / usable_min)
    assert abs(u["minutes_to_target"] - want) < 1e-9, (u, want)
print("usable tally:", qa["usable"])
# The run's files.
rows = [l.rstrip("\n").split("\t") for l in open(f"{run}/qa.tsv")]
head, rows = rows[0], rows[1:]
assert len(rows) == n, f"{len(rows)} rows in qa.tsv"
col = {name: i for i, name in enumerate(head)}
flagged = [(int(r[col["volume"]]), int(z)) for r in rows if r[col["flagged_slices"]] != "n/a"
           for z in r[col["flagged_slices"]].split(",")]
assert (spike, spike_slice) in flagged, flagged
assert [f for f in flagged if f[1] == spike_slice] == [(spike, spike_slice)], flagged
spike_fraction = float(rows[spike][col["outlier_fraction"]])
assert spike_fraction > 0.05, f"outlier fraction {spike_fraction} at the spike"
summary = json.load(open(f"{run}/qa.json"))
for key in ("tsnr", "aor", "aqi", "dvars_std", "dvars_vstd", "fd_mean", "fd_num", "fd_perc", "gsr_x", "gsr_y",
            "fber", "efc", "snr", "gcor", "fwhm_avg", "usable"):
    assert key in summary, f"qa.json lacks {key}"
assert summary["fd_num"] == sum(1 for x in fd if x > 0.2), summary["fd_num"]
assert summary["volumes"] == n
print("qa.json:", {k: summary[k] for k in ("tsnr", "aor", "aqi", "fd_mean", "fd_num", "efc", "snr", "gcor")})
# CNR of the design's contrast: higher in the phantom's active voxels than in 95% of the mask.
import gzip, struct
import numpy as np
sys.path.insert(0, sys.argv[5])
from nifti_min import read_nifti
still = f"{work}/session/runs/still"
summary = json.load(open(f"{still}/qa.json"))
cnr = read_nifti(f"{still}/qa_cnr.nii.gz")
active = read_nifti(f"{work}/still/activation_mask.nii.gz") > 0
mask = read_nifti(f"{still}/qa_mask.nii.gz") > 0
assert summary["cnr_contrast"] and math.isfinite(summary["cnr_p95"]), summary.get("cnr_p95")
inside = active & mask & np.isfinite(cnr)
assert inside.sum() > 10, inside.sum()
median_active = float(np.median(cnr[inside]))
print(f"CNR: median {median_active:.3f} in {inside.sum()} active voxels, p95 of the mask {summary['cnr_p95']:.3f}")
assert median_active > summary["cnr_p95"], (median_active, summary["cnr_p95"])
PY
for f in qa.tsv qa.json qa_mean.nii.gz qa_sd.nii.gz qa_tsnr.nii.gz qa_mask.nii.gz qa_cnr.nii.gz qa_report.html; do
  [[ -s "$WORK/session/runs/qa1/$f" ]] || die "runs/qa1/$f missing"
done
grep -q "QA alarm slice_z" "$WORK/server.log" || die "no slice_z alarm in the server's log"
/usr/bin/python3 "$HERE/../qa/check_report_in_browser.py" --min-images 6 "$WORK/session/runs/qa1/qa_report.html" ||
  die "the report did not pass in the browser"
one_rows=$(($(wc -l <"$WORK/session/runs/one/qa.tsv") - 1))
[[ $one_rows -eq 1 ]] || die "the one-volume run's qa.tsv has $one_rows rows"
/usr/bin/python3 "$HERE/../qa/check_report_in_browser.py" "$WORK/session/runs/one/qa_report.html" ||
  die "the one-volume run's report did not pass in the browser"
echo "qa_live_e2e: ok"
