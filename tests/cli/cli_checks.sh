#!/usr/bin/env bash
# Command-line checks of the rtfmri binary on real BOLD data (nitime's fmri1, installed by
# scripts/fetch-data.sh): every foundation subcommand runs and writes what it says, and bad input
# gives a clear error and a non-zero exit, never a crash.
#   usage: cli_checks.sh RTFMRI DATA_DIR WORK_DIR
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
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"

expect_ok "devices lists a selected device" '\*' "$RTFMRI" devices
expect_ok "info reads real BOLD" '10 x 10 x 18 x 40' "$RTFMRI" info "$BOLD"
expect_ok "info reports TR 1.35 s" 'TR: +1\.35 s' "$RTFMRI" info "$BOLD"
expect_ok "slicetime" 'slice' "$RTFMRI" slicetime "$BOLD" "$WORK/st.nii.gz" --order interleaved
expect_ok "slicetime output keeps the grid" '10 x 10 x 18 x 40' "$RTFMRI" info "$WORK/st.nii.gz"
expect_ok "detrend" 'detrend' "$RTFMRI" detrend "$WORK/st.nii.gz" "$WORK/dt.nii" --poly 2
expect_ok "mask" 'mask: [0-9]+ of 1800 voxels' "$RTFMRI" mask "$WORK/dt.nii" "$WORK/mask.nii.gz" --mean
expect_ok "mask output is 3D uint8" '10 x 10 x 18 x 1' "$RTFMRI" info "$WORK/mask.nii.gz"
expect_ok "smooth in mask" 'smoothed 40 volume' "$RTFMRI" smooth "$WORK/dt.nii" "$WORK/s.nii.gz" --fwhm 6 --mask "$WORK/mask.nii.gz"
expect_ok "smooth output keeps the grid" '10 x 10 x 18 x 40' "$RTFMRI" info "$WORK/s.nii.gz"

# Motion correction: a small phantom with known motion through `rtfmri mc`; the estimates (FSL .par, same convention
# and centre as the phantom's motion.par) match the truth within 0.1 mm and 0.1 degrees on this coarse 4 mm grid.
TEMPLATE="$DATA/mricron/ch2bet.nii.gz"
if [[ -f "$TEMPLATE" ]]; then
  "$RTFMRI" sim phantom --out "$WORK/ph" --template "$TEMPLATE" --grid 44x52x36 --voxel 4 --volumes 6 --tr 2 --block-on 4 --block-off 4 \
    --max-translation 2 --max-rotation 2 --seed 3 >/dev/null 2>&1
  expect_ok "mc on the phantom" 'mc: 6 volumes.*0 flagged' "$RTFMRI" mc "$WORK/ph/bold.nii.gz" --out "$WORK/mc"
  expect_ok "mc output keeps the grid" '44 x 52 x 36 x 6' "$RTFMRI" info "$WORK/mc.nii.gz"
  expect_ok "mc estimates match the phantom's truth" 'max error [0-9.]+ mm [0-9.]+ deg: ok' python3 - "$WORK/mc.par" \
    "$WORK/ph/motion.par" <<'PY'
import math, sys
est = [[float(v) for v in l.split()] for l in open(sys.argv[1]) if l.strip()]
truth = [[float(v) for v in l.split()] for l in open(sys.argv[2]) if l.strip()]
assert len(est) == len(truth) == 6, (len(est), len(truth))
mm = max(abs(e[i] - t[i]) for e, t in zip(est, truth) for i in (3, 4, 5))
deg = max(abs(e[i] - t[i]) * 180 / math.pi for e, t in zip(est, truth) for i in (0, 1, 2))
print(f"max error {mm:.4f} mm {deg:.4f} deg: {'ok' if mm < 0.1 and deg < 0.1 else 'TOO LARGE'}")
PY
  [[ $(wc -l < "$WORK/mc_fd.tsv") == 7 && $(wc -l < "$WORK/mc.1D") == 6 ]] && pass "mc writes _fd.tsv and .1D" ||
    fail "mc _fd.tsv/.1D row counts"
  expect_error "mc --ref beyond the series" 'volumes 0\.\.5' "$RTFMRI" mc "$WORK/ph/bold.nii.gz" --out "$WORK/o" --ref 9
  expect_error "mc --ref on another grid" 'grid' "$RTFMRI" mc "$WORK/ph/bold.nii.gz" --out "$WORK/o" --ref "$WORK/mask.nii.gz"
  # GLM on the motion-corrected phantom with its events and the motion estimates as confounds.
  expect_ok "glm on the phantom" 'task \(t\): max \|t\| [0-9.]+' "$RTFMRI" glm "$WORK/mc.nii.gz" --events "$WORK/ph/events.tsv" \
    --contrast task=task --contrast "both=task; task" --confounds "$WORK/mc.par" --out "$WORK/glm"
  expect_ok "glm writes the t map" '44 x 52 x 36 x 1' "$RTFMRI" info "$WORK/glm_contrast-task_stat-t.nii.gz"
  expect_ok "glm writes one beta per column" '44 x 52 x 36 x 8' "$RTFMRI" info "$WORK/glm_beta.nii.gz"
  [[ -f "$WORK/glm_contrast-both_stat-F.nii.gz" && $(head -1 "$WORK/glm_design.tsv") == task* ]] &&
    pass "glm writes the F map and the design" || fail "glm F map or design.tsv"
  expect_error "glm: unknown condition in a contrast" "unknown|houses" "$RTFMRI" glm "$WORK/mc.nii.gz" \
    --events "$WORK/ph/events.tsv" --contrast faces=houses --out "$WORK/o"
  printf 'onset\tduration\ttrial_type\nten\t5\ttask\n' > "$WORK/bad_events.tsv"
  expect_error "glm: malformed events.tsv" 'bad_events\.tsv:2' "$RTFMRI" glm "$WORK/mc.nii.gz" \
    --events "$WORK/bad_events.tsv" --contrast task=task --out "$WORK/o"
  head -6 "$WORK/mc_fd.tsv" > "$WORK/short_fd.tsv"
  expect_error "glm: confounds of the wrong length" '5 rows for a series of 6' "$RTFMRI" glm "$WORK/mc.nii.gz" \
    --events "$WORK/ph/events.tsv" --contrast task=task --confounds "$WORK/short_fd.tsv" --confound-columns fd_mm \
    --out "$WORK/o" --tr 2
else
  echo "skip: motion-correction and GLM checks ($TEMPLATE missing)"
fi

# Bad input: clear messages, non-zero exit, no crash.
printf 'this is not a nifti file' > "$WORK/garbage.nii"
expect_error "missing input file" 'does not exist|not found|No such' "$RTFMRI" smooth "$WORK/none.nii" "$WORK/o.nii" --fwhm 6
expect_error "corrupt NIfTI" 'rtfmri: error: .*garbage\.nii' "$RTFMRI" smooth "$WORK/garbage.nii" "$WORK/o.nii" --fwhm 6
head -c 2000 "$WORK/dt.nii" > "$WORK/truncated.nii"
expect_error "truncated NIfTI" 'rtfmri: error: .*truncated\.nii' "$RTFMRI" mask "$WORK/truncated.nii" "$WORK/o.nii"
"$RTFMRI" mask "$DATA/nipy/functional.nii.gz" "$WORK/other_mask.nii" >/dev/null 2>&1
expect_error "mask on another grid" 'voxel grid' "$RTFMRI" smooth "$BOLD" "$WORK/o.nii" --fwhm 6 --mask "$WORK/other_mask.nii"
expect_error "negative FWHM" 'fwhm|FWHM|NONNEGATIVE|negative' "$RTFMRI" smooth "$BOLD" "$WORK/o.nii" --fwhm -2
expect_error "unknown device" 'no OpenCL device matches' "$RTFMRI" --device 99:0 smooth "$BOLD" "$WORK/o.nii" --fwhm 6
expect_error "bad slice order" 'order' "$RTFMRI" slicetime "$BOLD" "$WORK/o.nii" --order sideways
expect_error "no detrend basis" 'poly|highpass' "$RTFMRI" detrend "$BOLD" "$WORK/o.nii"
expect_error "bad warm-up grid" "warm: '64x64@3' is neither a grid" "$RTFMRI" run --session-dir "$WORK/sess" \
  --listen tcp://127.0.0.1:0 --no-outputs --warm 64x64@3
[[ ! -e "$WORK/sess/runs" ]] && pass "a refused warm-up grid records nothing" || fail "a refused warm-up grid recorded"
expect_error "lockstep address without a port" "lockstep: 'localhost' is not HOST:PORT" "$RTFMRI" sim replay "$BOLD" \
  --to tcp://127.0.0.1:1 --lockstep localhost
expect_error "lockstep with no server" 'lockstep: no feedback server on 127.0.0.1:1 within 0.5 s' "$RTFMRI" sim replay \
  "$BOLD" --to tcp://127.0.0.1:1 --lockstep 127.0.0.1:1 --lockstep-timeout 0.5
[[ ! -e "$WORK/o.nii" ]] && pass "failed commands left no output" || fail "a failed command wrote $WORK/o.nii"

if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all CLI checks passed"
