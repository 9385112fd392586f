#!/usr/bin/env bash
# Issue 20, connectome Pearson N 1,000,000 x 128 at density 1% (5 x 10^9 edges, 10^10 stored values) per CONFIGS.
# Run on the GPU machine from the repository root: `bash bench/scale/device_connectome_density.sh` ($OUT: results).
# CONFIGS picks the configurations; LIMIT (seconds, default 580) bounds the benchmark inside, so that the logs are still
# copied to $OUT after it (do not wrap the script in an outer timeout). The JSON report is written after each one.
set -uo pipefail
# shellcheck source=device_env.sh
source "$(dirname "$0")/device_env.sh"
[[ -f $D/cd/bold.nii ]] || python3 bench/scale/scale_bench.py make-connectome $D/cd --nodes 1000000 --length 128
echo "data: $((SECONDS - T0)) s; THP $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
( while sleep 20; do echo "$((SECONDS - T0)) s: $(free -g | awk '/Mem/{print $3}') GB used, shm $(du -sh /dev/shm 2>/dev/null | cut -f1), disk $(df -h / | awk 'NR==2{print $3}')"; done ) &
MON=$!
rm -f $D/we/*.log  # only this call's logs go to $OUT
timeout $((${LIMIT:-580} - SECONDS + T0)) "${B[@]}" --rtfmri "$R" --case connectome --data $D/cd --work $D/we \
  --configs "${CONFIGS:-gpus=1;gpus=4}" --runs 1 --warmup 0 --args "--density 0.01 ${EXTRA:---chunk-dir none}" --digest \
  --out "$OUT"/c1pct_${TAG:-a}.json 2>&1 | grep -v '^{' | tail -12
kill $MON
for f in $D/we/*.log; do grep -vE "chunks [0-9]+/" $f | tail -250 > "$OUT/density_${TAG:-a}_$(basename "$f")"; done
echo "done: $((SECONDS - T0)) s"
