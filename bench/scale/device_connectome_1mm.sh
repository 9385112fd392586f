#!/usr/bin/env bash
# Issue 20, 1 mm connectome (N 1,561,152 x 1200, r >= 0.5: the pass is the work) on 1, 2, 4 GPUs in one process.
# Run on the GPU machine from the repository root: `bash bench/scale/device_connectome_1mm.sh` ($OUT: where results go).
# CONFIGS picks the configurations; LIMIT (seconds, default 580) bounds the benchmark inside, so that the logs are still
# copied to $OUT after it (do not wrap the script in an outer timeout). The JSON report is written after each one.
set -uo pipefail
# From the repository root; .device/bundle (device-bundle.sh) and .device/ompi (pack_openmpi.sh) are carried there.
cd "$(dirname "$0")/../.." || exit 1
source .device/ompi/env.sh
export OMPI_MCA_btl_vader_single_copy_mechanism=none
R="env OCL_ICD_FILENAMES=$OCL_ICD_FILENAMES $PWD/.device/bundle/run rtfmri -v"
D=/tmp/scale; mkdir -p $D "$OUT"
T0=$SECONDS
df -h / /tmp /dev/shm 2>&1 | tail -3; free -g | head -2; nproc; nvidia-smi -L
B=(python3 bench/scale/scale_bench.py run --mpirun "mpirun --oversubscribe --bind-to none")
[[ -f $D/c1/bold.nii ]] || python3 bench/scale/scale_bench.py make-connectome $D/c1 --nodes 1561152 --length 1200
echo "1 mm data: $((SECONDS - T0)) s"
timeout $((${LIMIT:-580} - SECONDS + T0)) "${B[@]}" --rtfmri "$R" --case connectome --data $D/c1 --work $D/w1 \
  --configs "${CONFIGS:-gpus=1;gpus=2;gpus=4}" --runs 1 --warmup 0 --args "--threshold 0.5" --digest \
  --out "$OUT"/c1mm_${TAG:-a}.json 2>&1 | grep -v '^{' | tail -12
for f in $D/w1/*.log; do grep -E "chunk .* on device|device [0-9] \(|connectome:|seconds|took" $f | tail -150 > "$OUT/$(basename "$f")"; done
echo "done: $((SECONDS - T0)) s"
