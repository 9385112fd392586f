#!/usr/bin/env bash
# The README's demo command. Until the live path exists (later issues), it runs the foundation commands
# on a real BOLD run installed from Debian's python3-nitime package and prints a short summary:
#   slice-timing correction -> detrending -> brain mask -> smoothing inside the mask.
# Outputs go to ${RTF_DEMO_OUT:-demo-out}/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RTF_BUILD_DIR:-$ROOT/build}"
OUT="${RTF_DEMO_OUT:-$ROOT/demo-out}"

bash "$ROOT/scripts/setup.sh"
bash "$ROOT/scripts/fetch-data.sh" "$BUILD/data"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target rtfmri
RTFMRI="$BUILD/cli/rtfmri"
BOLD="$BUILD/data/nitime/fmri1.nii.gz"
mkdir -p "$OUT"

echo "== OpenCL devices"
"$RTFMRI" devices
echo "== input: real BOLD from python3-nitime"
"$RTFMRI" info "$BOLD"
echo "== pipeline"
"$RTFMRI" slicetime "$BOLD" "$OUT/bold_st.nii.gz" --order ascending
"$RTFMRI" detrend "$OUT/bold_st.nii.gz" "$OUT/bold_st_dt.nii.gz" --poly 2
"$RTFMRI" mask "$OUT/bold_st_dt.nii.gz" "$OUT/mask.nii.gz" --mean
"$RTFMRI" smooth "$OUT/bold_st_dt.nii.gz" "$OUT/bold_st_dt_s6.nii.gz" --fwhm 6 --mask "$OUT/mask.nii.gz"
echo "== result"
"$RTFMRI" info "$OUT/bold_st_dt_s6.nii.gz"
echo "demo: outputs in $OUT: bold_st (slice-timed), bold_st_dt (detrended), mask, bold_st_dt_s6 (smoothed)"
