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
failures=0
pass() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; failures=$((failures + 1)); }

# expect_ok NAME PATTERN CMD...: exit 0 and output matching PATTERN
expect_ok() {
  local name=$1 pattern=$2
  shift 2
  local out
  out=$("$@" 2>&1)
  local rc=$?
  if [[ $rc -eq 0 && "$out" =~ $pattern ]]; then pass "$name"; else fail "$name (rc=$rc): $out"; fi
}
# expect_error NAME PATTERN CMD...: exit 1..125 (not a signal) and output matching PATTERN
expect_error() {
  local name=$1 pattern=$2
  shift 2
  local out
  out=$("$@" 2>&1)
  local rc=$?
  if [[ $rc -ge 1 && $rc -lt 126 && "$out" =~ $pattern ]]; then pass "$name"; else fail "$name (rc=$rc): $out"; fi
}

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
[[ ! -e "$WORK/o.nii" ]] && pass "failed commands left no output" || fail "a failed command wrote $WORK/o.nii"

if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all CLI checks passed"
