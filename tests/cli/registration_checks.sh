#!/usr/bin/env bash
# Command-line checks of `rtfmri register` and `rtfmri apply` on a real brain (Colin27, ch2bet from Debian's
# mricron-data, installed by scripts/fetch-data.sh): a hand-written ITK affine moves the brain (apply), register finds
# that affine again (compared parameter by parameter), the inverse brings the image back, an atlas resampled with
# nearest keeps its labels, `mask --template colin27` finds the moved head's brain, and bad input gives a clear error
# and a non-zero exit, never a crash.
#   usage: registration_checks.sh RTFMRI DATA_DIR WORK_DIR
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

# A rigid transform in LPS, as ITK writes it: 4 degrees about z and 3 about x (cos/sin below), translation (3, -4, 2).
cat >"$WORK/truth.txt" <<'ITK'
#Insight Transform File V1.0
#Transform 0
Transform: AffineTransform_double_3_3
Parameters: 0.99756405 -0.06966087 0.00365077 0.06975647 0.99619692 -0.05220847 0 0.05233596 0.99862953 3 -4 2
FixedParameters: 0 -18 18
ITK
# The fixed image: a copy of the brain written by apply with no transform (world space only: the same grid).
expect_ok "apply with no transform copies the image" 'resampled' "$RTFMRI" apply "$BRAIN" -r "$BRAIN" -o "$WORK/brain.nii.gz"
# moving(T x) = fixed(x): resample the brain at T^-1, i.e. through the inverse.
expect_ok "apply the inverse of a transform" 'through 1 transform' \
  "$RTFMRI" apply "$BRAIN" -r "$BRAIN" -t "[$WORK/truth.txt,1]" -o "$WORK/moved.nii.gz"
expect_ok "register recovers a known rigid transform" 'NCC [0-9.]+ -> (0\.9[89]|1\.000)' \
  "$RTFMRI" register "$WORK/moved.nii.gz" "$WORK/brain.nii.gz" --dof 6 --levels 8:8,4:4 --out "$WORK/reg"
for f in reg_affine.txt reg_warped.nii.gz reg_register.json; do
  if [[ -s "$WORK/$f" ]]; then pass "register wrote $f"; else fail "register did not write $f"; fi
done
# Compare the points the two transforms map a brain-sized box's corners to (tolerance 0.5 mm, the issue's bar).
COMPARE="$(dirname "${BASH_SOURCE[0]}")/compare_itk_affines.py"
if python3 "$COMPARE" "$WORK/truth.txt" "$WORK/reg_affine.txt" 0.5; then pass "estimate within 0.5 mm of the truth"; else fail "estimate differs from the truth"; fi
expect_ok "register with a fixed mask and MI" 'MI [0-9.]+ -> [0-9.]+' \
  "$RTFMRI" register "$WORK/moved.nii.gz" "$WORK/brain.nii.gz" --dof 6 --cost mi --levels 8:8,4:4 \
  --fixed-mask "$BRAIN" --out "$WORK/reg_mi"
if python3 "$COMPARE" "$WORK/truth.txt" "$WORK/reg_mi_affine.txt" 0.5; then pass "MI estimate within 0.5 mm of the truth"; else fail "MI estimate differs from the truth"; fi
expect_ok "apply brings the moved image back" 'resampled' \
  "$RTFMRI" apply "$WORK/moved.nii.gz" -r "$BRAIN" -t "$WORK/reg_affine.txt" -n cubic -o "$WORK/back.nii.gz"
expect_ok "apply keeps labels with nearest" 'nearest' \
  "$RTFMRI" apply "$AAL" -r "$WORK/moved.nii.gz" -t "$WORK/truth.txt" -n nearest -o "$WORK/aal_moved.nii.gz"
expect_ok "labels keep the atlas datatype" "$("$RTFMRI" info "$AAL" | grep -i -m1 'type')" "$RTFMRI" info "$WORK/aal_moved.nii.gz"

# Template-based brain extraction: Colin27's head (with skull) moved by the truth; the brain mask pulled in by
# registration must overlap the brain moved the same way (Dice, voxels nonzero in each).
HEAD="$DATA/mricron/ch2.nii.gz"
expect_ok "apply moves the head" 'resampled' "$RTFMRI" apply "$HEAD" -r "$HEAD" -t "[$WORK/truth.txt,1]" -o "$WORK/head.nii.gz"
expect_ok "apply moves the brain" 'resampled' \
  "$RTFMRI" apply "$BRAIN" -r "$HEAD" -t "[$WORK/truth.txt,1]" -n nearest -o "$WORK/head_brain.nii.gz"
expect_ok "mask --template colin27" 'inside .* brain after registration' \
  "$RTFMRI" mask "$WORK/head.nii.gz" "$WORK/template_mask.nii.gz" --template colin27
if python3 - "$WORK/template_mask.nii.gz" "$WORK/head_brain.nii.gz" <<'PY'; then pass "template mask overlaps the brain (Dice >= 0.97)"; else fail "template mask misses the brain"; fi
import gzip, struct, sys
def nonzero(path):
    raw = gzip.open(path).read()
    dim = struct.unpack("<8h", raw[40:56])
    datatype = struct.unpack("<h", raw[70:72])[0]
    offset = int(struct.unpack("<f", raw[108:112])[0])
    n = dim[1] * dim[2] * dim[3]
    fmt = {2: "B", 4: "h", 8: "i", 16: "f", 64: "d", 512: "H"}[datatype]
    values = struct.unpack("<%d%s" % (n, fmt), raw[offset:offset + n * struct.calcsize(fmt)])
    return [v != 0 for v in values]
a, b = nonzero(sys.argv[1]), nonzero(sys.argv[2])
dice = 2.0 * sum(1 for x, y in zip(a, b) if x and y) / (sum(a) + sum(b))
print(f"Dice {dice:.4f}")
sys.exit(0 if dice >= 0.97 else 1)
PY
expect_error "mask --template PATH needs --template-brain" 'template-brain' \
  "$RTFMRI" mask "$WORK/head.nii.gz" "$WORK/bad.nii.gz" --template "$HEAD"

# Bad input: clear errors, no crash.
expect_error "register refuses a 4D image" 'must be 3D' \
  "$RTFMRI" register "$DATA/nitime/fmri1.nii.gz" "$WORK/brain.nii.gz" --out "$WORK/bad"
expect_error "register refuses --dof 7" 'dof' "$RTFMRI" register "$WORK/moved.nii.gz" "$BRAIN" --dof 7 --out "$WORK/bad"
expect_error "register refuses an unknown cost" "cost" \
  "$RTFMRI" register "$WORK/moved.nii.gz" "$BRAIN" --cost ssd --out "$WORK/bad"
expect_error "register refuses bad levels" 'levels' \
  "$RTFMRI" register "$WORK/moved.nii.gz" "$BRAIN" --levels 8:x --out "$WORK/bad"
expect_error "register names a missing init file" 'nonexistent' \
  "$RTFMRI" register "$WORK/moved.nii.gz" "$BRAIN" --init /nonexistent/init.txt --out "$WORK/bad"
echo "not a transform" >"$WORK/garbage.txt"
expect_error "apply names a transform it cannot read" 'garbage.txt: not an ITK' \
  "$RTFMRI" apply "$BRAIN" -r "$BRAIN" -t "$WORK/garbage.txt" -o "$WORK/bad.nii.gz"
expect_error "apply refuses a missing reference" 'reference' \
  "$RTFMRI" apply "$BRAIN" -r /nonexistent.nii.gz -o "$WORK/bad.nii.gz"
# A reference cut short (only its grid is used, but a file gone wrong is refused, naming it): compressed and not.
head -c "$(($(stat -c %s "$BRAIN") * 2 / 3))" "$BRAIN" >"$WORK/cut_ref.nii.gz"
expect_error "apply refuses a truncated .nii.gz reference" 'cut_ref.nii.gz: file is truncated' \
  "$RTFMRI" apply "$BRAIN" -r "$WORK/cut_ref.nii.gz" -o "$WORK/bad.nii.gz"
gzip -dc "$BRAIN" | head -c 100000 >"$WORK/cut_ref.nii"
expect_error "apply refuses a truncated .nii reference" 'cut_ref.nii: file is truncated' \
  "$RTFMRI" apply "$BRAIN" -r "$WORK/cut_ref.nii" -o "$WORK/bad.nii.gz"
expect_error "apply refuses --default-value nan" 'must be a finite number \(got nan\)' \
  "$RTFMRI" apply "$BRAIN" -r "$BRAIN" --default-value nan -o "$WORK/bad.nii.gz"
if ls "$WORK"/bad* >/dev/null 2>&1; then fail "a refused command left an output file"; else pass "refused commands wrote nothing"; fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
