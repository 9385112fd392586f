#!/usr/bin/env bash
# rtfmri qa on a 104x104x72x600 phantom (issue 37's benchmark size), whole process, on the GPU machine: run from the
# repository root with .device/bundle (scripts/bundle.sh .device/bundle build/cli/rtfmri) and
# .device/data/mricron/ch2bet.nii.gz carried; the phantom is made once in /tmp/qa_big, then 3 runs on .nii.gz and .nii.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
R=.device/bundle/run
T=/tmp/qa_big
mkdir -p $T
if [[ ! -f $T/ph/bold.nii.gz ]]; then
  $R rtfmri sim phantom --out $T/ph --template .device/data/mricron/ch2bet.nii.gz \
    --grid 104x104x72 --voxel 2 --volumes 600 --tr 1 --motion none --seed 1 2>&1 | tail -1
fi
[[ -f $T/ph/bold.nii ]] || (gzip -dc $T/ph/bold.nii.gz > $T/ph/bold.nii)
for f in bold.nii.gz bold.nii; do
  for i in 0 1 2; do
    /usr/bin/time -f "$f run $i: %e s wall, %M KB" $R rtfmri --device gpu qa $T/ph/$f --out $T/q$i 2>&1 | grep -E "qa: read|wall"
  done
done
