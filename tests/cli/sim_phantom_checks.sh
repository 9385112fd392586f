#!/usr/bin/env bash
# Command-line checks of `rtfmri sim phantom` on a tiny grid (Colin27 from scripts/fetch-data.sh): it writes every
# file with the right sizes, the same seed gives the same bytes, a motion file replays its trajectory, events files
# set the conditions, and bad input (grid, region, motion, missing template) gives a clear error, never a crash.
#   usage: sim_phantom_checks.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
if [[ ! -f "$DATA/mricron/ch2bet.nii.gz" ]]; then
  echo "SKIP: $DATA/mricron/ch2bet.nii.gz missing (run scripts/fetch-data.sh)"
  exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
expect_lines() {  # NAME FILE COUNT
  local n
  n=$(wc -l < "$2" 2>/dev/null || echo missing)
  if [[ "$n" == "$3" ]]; then pass "$1"; else fail "$1: $2 has $n lines, expected $3"; fi
}

TINY=(--grid 20x24x14 --voxel 7 --volumes 12 --tr 2 --block-on 6 --block-off 6)
export RTFMRI_DATA_DIR="$DATA"

expect_ok "phantom runs" 'phantom: 20x24x14x12 at 7x7x7 mm' "$RTFMRI" sim phantom --out "$WORK/p1" "${TINY[@]}" --seed 3 --threads 2
for f in bold.nii.gz bold.json brain_mask.nii.gz tissue.nii.gz tissue_fractions.nii.gz activation_mask.nii.gz \
  activation_fraction.nii.gz activation_psc.nii.gz motion.tsv motion.par events.tsv design.tsv phantom.json; do
  if [[ -s "$WORK/p1/$f" ]]; then pass "writes $f"; else fail "no $f"; fi
done
expect_ok "bold is 4D with the TR" '20 x 24 x 14 x 12' "$RTFMRI" info "$WORK/p1/bold.nii.gz"
expect_ok "bold is int16" 'datatype: +int16' "$RTFMRI" info "$WORK/p1/bold.nii.gz"
expect_ok "bold TR" 'TR: +2 s' "$RTFMRI" info "$WORK/p1/bold.nii.gz"
expect_ok "mask on the same grid" '20 x 24 x 14 x 1' "$RTFMRI" info "$WORK/p1/activation_mask.nii.gz"
expect_lines "motion.tsv: header + one row per volume" "$WORK/p1/motion.tsv" 13
expect_lines "motion.par: one row per volume" "$WORK/p1/motion.par" 12
expect_lines "design.tsv: header + one row per volume" "$WORK/p1/design.tsv" 13
if grep -q '"achieved_tsnr"' "$WORK/p1/phantom.json"; then pass "phantom.json reports tSNR"; else fail "phantom.json"; fi

"$RTFMRI" sim phantom --out "$WORK/p2" "${TINY[@]}" --seed 3 --threads 1 >/dev/null 2>&1
if cmp -s "$WORK/p1/bold.nii.gz" "$WORK/p2/bold.nii.gz" && cmp -s "$WORK/p1/motion.tsv" "$WORK/p2/motion.tsv"; then
  pass "same seed, same bytes (any thread count)"
else
  fail "same seed gave different output"
fi
"$RTFMRI" sim phantom --out "$WORK/p3" "${TINY[@]}" --seed 4 >/dev/null 2>&1
if cmp -s "$WORK/p1/bold.nii.gz" "$WORK/p3/bold.nii.gz"; then fail "another seed gave the same data"; else pass "another seed, other data"; fi

expect_ok "motion file replays" 'motion from file' "$RTFMRI" sim phantom --out "$WORK/p4" "${TINY[@]}" --seed 9 \
  --motion-file "$WORK/p1/motion.tsv"
if cmp -s "$WORK/p1/motion.tsv" "$WORK/p4/motion.tsv"; then pass "motion file kept exactly"; else fail "motion file changed"; fi
expect_ok "FSL .par replays" 'motion from file' "$RTFMRI" sim phantom --out "$WORK/p5" "${TINY[@]}" \
  --motion-file "$WORK/p1/motion.par"

printf 'onset\tduration\ttrial_type\n2\t4\tleft\n10\t0\tright\n' > "$WORK/events.tsv"
expect_ok "events design" 'phantom:' "$RTFMRI" sim phantom --out "$WORK/p6" "${TINY[@]}" --events "$WORK/events.tsv" \
  --region=-38,-24,56,10,left --region 38,-24,56,10,right,3 --datatype float32 --no-noise --motion none
if [[ "$(head -1 "$WORK/p6/design.tsv")" == $'left\tright' ]]; then pass "design columns"; else fail "design header"; fi
expect_ok "float32 output" 'datatype: +float32' "$RTFMRI" info "$WORK/p6/bold.nii.gz"

expect_error "bad grid" 'grid' "$RTFMRI" sim phantom --out "$WORK/x" --grid 20x24
expect_error "bad region" "region '1,2,x,4'" "$RTFMRI" sim phantom --out "$WORK/x" "${TINY[@]}" --region 1,2,x,4
expect_error "region with an unknown trial type" "trial type 'up'" "$RTFMRI" sim phantom --out "$WORK/x" "${TINY[@]}" \
  --region 0,0,0,5,up
expect_error "bad motion kind" 'motion' "$RTFMRI" sim phantom --out "$WORK/x" --motion wobbly
# A copy of the binary with no data beside it and an empty data dir: the template cannot be found.
mkdir -p "$WORK/bin" "$WORK/empty"
ln "$RTFMRI" "$WORK/bin/rtfmri" 2>/dev/null || cp "$RTFMRI" "$WORK/bin/rtfmri"
if [[ ! -f /usr/share/mricron/templates/ch2bet.nii.gz ]]; then
  expect_error "missing template names the fix" 'ch2bet.nii.gz.*scripts/fetch-data.sh' \
    env RTFMRI_DATA_DIR="$WORK/empty" "$WORK/bin/rtfmri" sim phantom --out "$WORK/x" "${TINY[@]}"
fi

if [[ $failures -gt 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all sim phantom checks passed"
