#!/usr/bin/env bash
# Command-line checks of `rtfmri normalize` on a real brain (Colin27's ch2bet from Debian's mricron-data, installed by
# scripts/fetch-data.sh): the brain moved by a known affine is normalised back to the default template (colin27); the
# files appear with ITK's conventions (an affine text file, displacement fields of intent 1007), the affine is found
# again, the warp is invertible (no folded voxel) and the NCC in the template's brain comes back to ~1; the warp chain
# and its inverse drive `rtfmri apply`; bad input gives a clear error, a non-zero exit and no output, never a crash.
#   usage: normalization_checks.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
BRAIN="$DATA/mricron/ch2bet.nii.gz"
AAL="$DATA/mricron/aal.nii.gz"
if [[ ! -f "$BRAIN" || ! -f "$AAL" ]]; then
  echo "SKIP: $BRAIN or $AAL missing (run scripts/fetch-data.sh)"
  exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
export RTFMRI_DATA_DIR="$DATA"  # where --template colin27 is found

# An affine in LPS: 5 degrees about z, scales 1.05 / 0.97 / 1.02, translation (4, -3, 5) mm about (0, -18, 18).
cat >"$WORK/truth.txt" <<'ITK'
#Insight Transform File V1.0
#Transform 0
Transform: AffineTransform_double_3_3
Parameters: 1.04600 -0.08454 0 0.09152 0.96631 0 0 0 1.02 4 -3 5
FixedParameters: 0 -18 18
ITK
expect_ok "apply moves the brain" 'resampled' \
  "$RTFMRI" apply "$BRAIN" -r "$BRAIN" -t "[$WORK/truth.txt,1]" -n cubic -o "$WORK/subject.nii.gz"
expect_ok "normalize to the default template" 'NCC in the template.s brain: affine [0-9.]+, non-linear 0\.9[5-9]' \
  "$RTFMRI" normalize "$WORK/subject.nii.gz" --jacobian --out "$WORK/n"
for f in n_affine.txt n_warp.nii.gz n_inverse_warp.nii.gz n_warped.nii.gz n_jacobian.nii.gz n_normalize.json; do
  if [[ -s "$WORK/$f" ]]; then pass "normalize wrote $f"; else fail "normalize did not write $f"; fi
done
COMPARE="$(dirname "${BASH_SOURCE[0]}")/compare_itk_affines.py"
# The same brain: the affine alone should be the truth (within 1 mm at a brain-sized box's corners; the warp is left
# only interpolation differences).
if python3 "$COMPARE" "$WORK/truth.txt" "$WORK/n_affine.txt" 1.0; then pass "affine within 1 mm of the truth"; else fail "affine differs from the truth"; fi
if python3 - "$WORK/n_normalize.json" "$WORK/n_warp.nii.gz" <<'PY'; then pass "report and field header"; else fail "report or field header"; fi
import gzip, json, struct, sys
r = json.load(open(sys.argv[1]))
assert r["jacobian"]["folded_voxels"] == 0, r["jacobian"]
assert r["jacobian"]["min"] > 0, r["jacobian"]
assert r["inverse_error_mm"]["mean"] < 0.1, r["inverse_error_mm"]
assert r["ncc_in_template_brain"] > r["ncc_in_template_brain_affine"] - 1e-3, r
raw = gzip.open(sys.argv[2]).read(352)
dim = struct.unpack("<8h", raw[40:56])
intent = struct.unpack("<h", raw[68:70])[0]
assert dim[0] == 5 and dim[4] == 1 and dim[5] == 3, dim  # ITK's vector image: x, y, z, 1, 3
assert intent == 1007, intent
print("folded", r["jacobian"]["folded_voxels"], "inverse error", r["inverse_error_mm"], "dims", dim[:6])
PY
# The chains: the subject onto the template, and the atlas (template space) onto the subject with labels kept.
expect_ok "apply pulls the subject onto the template through warp and affine" 'through 2 transform' \
  "$RTFMRI" apply "$WORK/subject.nii.gz" -r "$BRAIN" -t "$WORK/n_warp.nii.gz" -t "$WORK/n_affine.txt" -o "$WORK/back.nii.gz"
expect_ok "apply pulls the atlas onto the subject through the inverses" 'nearest' \
  "$RTFMRI" apply "$AAL" -r "$WORK/subject.nii.gz" -t "[$WORK/n_affine.txt,1]" -t "$WORK/n_inverse_warp.nii.gz" \
  -n nearest -o "$WORK/aal_subject.nii.gz"
expect_error "apply refuses the inverse of a field" 'no closed-form inverse' \
  "$RTFMRI" apply "$AAL" -r "$WORK/subject.nii.gz" -t "[$WORK/n_warp.nii.gz,1]" -o "$WORK/bad.nii.gz"

# Bad input.
expect_error "normalize names a template that does not exist" 'nonexistent' \
  "$RTFMRI" normalize "$WORK/subject.nii.gz" --template /nonexistent/template.nii.gz --out "$WORK/bad"
expect_error "normalize says where mni152 was looked for" 'FSLDIR' \
  env -u FSLDIR RTFMRI_DATA_DIR="$WORK/nowhere" "$RTFMRI" normalize "$WORK/subject.nii.gz" --template mni152 --out "$WORK/bad"
expect_error "normalize refuses a 4D image" '3D' \
  "$RTFMRI" normalize "$DATA/nitime/fmri1.nii.gz" --out "$WORK/bad"
expect_error "normalize refuses bad levels" 'level' \
  "$RTFMRI" normalize "$WORK/subject.nii.gz" --levels 8:x --out "$WORK/bad"
if ls "$WORK"/bad* >/dev/null 2>&1; then fail "a refused command left an output file"; else pass "refused commands wrote nothing"; fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
