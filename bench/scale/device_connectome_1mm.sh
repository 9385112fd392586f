#!/usr/bin/env bash
# Issue 20, 1 mm connectome (N 1,561,152 x 1200, r >= 0.5: the pass is the work) on 1, 2, 4 GPUs in one process.
# Run on the GPU machine from the repository root: `bash bench/scale/device_connectome_1mm.sh` ($OUT: where results go).
# CONFIGS picks the configurations; LIMIT (seconds, default 580) bounds the benchmark inside, so that the logs are still
# copied to $OUT after it (do not wrap the script in an outer timeout). The JSON report is written after each one.
set -uo pipefail
# shellcheck source=device_env.sh
source "$(dirname "$0")/device_env.sh"
df -h / /tmp /dev/shm 2>&1 | tail -3; free -g | head -2; nproc; nvidia-smi -L
[[ -f $D/c1/bold.nii ]] || python3 bench/scale/scale_bench.py make-connectome $D/c1 --nodes 1561152 --length 1200
echo "1 mm data: $((SECONDS - T0)) s"
rm -f $D/w1/*.log  # only this call's logs go to $OUT
timeout $((${LIMIT:-580} - SECONDS + T0)) "${B[@]}" --rtfmri "$R" --case connectome --data $D/c1 --work $D/w1 \
  --configs "${CONFIGS:-gpus=1;gpus=2;gpus=4}" --runs 1 --warmup 0 --args "--threshold 0.5" --digest \
  --out "$OUT"/c1mm_${TAG:-a}.json 2>&1 | grep -v '^{' | tail -12
for f in $D/w1/*.log; do grep -E "chunk .* on device|device [0-9] \(|connectome:|seconds|took" $f | tail -150 > "$OUT/1mm_${TAG:-a}_$(basename "$f")"; done
echo "done: $((SECONDS - T0)) s"
