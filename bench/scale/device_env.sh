# shellcheck shell=bash disable=SC2034
# Sourced by bench/scale/device_*.sh on the GPU machine: from the repository root (.device/bundle made by
# scripts/bundle.sh and .device/ompi by pack_openmpi.sh carried there), the packed OpenMPI, R (rtfmri
# with its libraries, verbose, OCL_ICD_FILENAMES passed on: mpirun would cut it to its first entry; EXE names another
# executable of the bundle, for an A/B comparison), D (the data
# folder), B (the benchmark's run command with mpirun's options), T0 (the start).
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
# shellcheck source=/dev/null
source .device/ompi/env.sh
export OMPI_MCA_btl_vader_single_copy_mechanism=${SINGLE_COPY:-none}  # no CMA in most containers
R="env OCL_ICD_FILENAMES=$OCL_ICD_FILENAMES $PWD/.device/bundle/run ${EXE:-rtfmri} -v"
D=/tmp/scale
mkdir -p "$D" "$OUT"
T0=$SECONDS
B=(python3 bench/scale/scale_bench.py run --mpirun "mpirun --oversubscribe --bind-to none")
