#!/usr/bin/env python3
"""Injects scanner artefacts into a 4D NIfTI for tests/cli/qa_checks.sh: qa_artefacts.py IN OUT SPEC...

SPEC is VOLUME:SLICE:FACTOR: every voxel of that slice (third axis) of that volume multiplied by FACTOR (0.5: a slice
drop-out, 1.5: a spike). Written as float32 on IN's grid."""
import sys

import numpy as np

from nifti_min import read_nifti, write_nifti


def main():
    source, target, *specs = sys.argv[1:]
    data = read_nifti(source).astype(np.float32)
    for spec in specs:
        volume, slice_, factor = spec.split(":")
        data[:, :, int(slice_), int(volume)] *= np.float32(factor)
    write_nifti(target, data, like=source)
    return 0


if __name__ == "__main__":
    sys.exit(main())
