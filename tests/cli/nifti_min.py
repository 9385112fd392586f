"""Minimal NIfTI-1 reading and writing with numpy for the CLI checks (no nibabel on Debian's minimal installs).

read_nifti: float32, int16, uint8 and float64 data, scl_slope/scl_inter applied to integer data, .nii or .nii.gz.
write_nifti: float32, 2 mm voxels, a fixed sform; enough for test inputs. With like=PATH: float32 on that file's grid
(its header's voxel sizes, qform and sform kept), e.g. a mask for a given series."""
import gzip
import struct

import numpy as np

_TYPES = {2: "<u1", 4: "<i2", 8: "<i4", 16: "<f4", 64: "<f8"}


def write_nifti(path, data, like=None):
    data = np.asarray(data, dtype="<f4")
    shape = data.shape + (1,) * (4 - data.ndim)
    if like is not None:
        raw = gzip.open(like).read(348) if like.endswith(".gz") else open(like, "rb").read(348)
        hdr = bytearray(raw)
        assert struct.unpack_from("<i", hdr, 0)[0] == 348, f"{like}: not a little-endian NIfTI-1 header"
        struct.pack_into("<8h", hdr, 40, 4 if shape[3] > 1 else 3, *shape, 1, 1, 1)
        struct.pack_into("<hh", hdr, 70, 16, 32)  # float32
        struct.pack_into("<f", hdr, 108, 352.0)  # vox_offset
        struct.pack_into("<2f", hdr, 112, 1.0, 0.0)  # scl_slope, scl_inter
        struct.pack_into("<2f", hdr, 124, 0.0, 0.0)  # cal_max, cal_min
        hdr[344:348] = b"n+1\0"
        with open(path, "wb") as f:
            f.write(bytes(hdr) + b"\0\0\0\0" + data.reshape(shape, order="F").tobytes(order="F"))
        return
    hdr = bytearray(348)
    struct.pack_into("<i", hdr, 0, 348)
    struct.pack_into("<8h", hdr, 40, 4 if shape[3] > 1 else 3, *shape, 1, 1, 1)
    struct.pack_into("<hh", hdr, 70, 16, 32)  # float32
    struct.pack_into("<8f", hdr, 76, 1.0, 2.0, 2.0, 2.0, 1.0, 0, 0, 0)
    struct.pack_into("<f", hdr, 108, 352.0)  # vox_offset
    struct.pack_into("<f", hdr, 112, 1.0)  # scl_slope
    struct.pack_into("<hh", hdr, 252, 0, 1)  # qform 0, sform scanner
    struct.pack_into("<4f", hdr, 280, 2.0, 0, 0, -16.0)
    struct.pack_into("<4f", hdr, 296, 0, 2.0, 0, -18.0)
    struct.pack_into("<4f", hdr, 312, 0, 0, 2.0, -12.0)
    hdr[344:348] = b"n+1\0"
    with open(path, "wb") as f:
        f.write(bytes(hdr) + b"\0\0\0\0" + data.reshape(shape, order="F").tobytes(order="F"))


def read_nifti(path):
    raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    dim = struct.unpack_from("<8h", raw, 40)
    datatype = struct.unpack_from("<h", raw, 70)[0]
    offset = int(struct.unpack_from("<f", raw, 108)[0])
    slope, inter = struct.unpack_from("<2f", raw, 112)
    assert datatype in _TYPES, f"{path}: NIfTI datatype {datatype}"
    shape = tuple(d for d in dim[1 : dim[0] + 1])
    data = np.frombuffer(raw, dtype=_TYPES[datatype], offset=offset, count=int(np.prod(shape))).reshape(shape, order="F")
    if datatype not in (16, 64) and slope not in (0.0, 1.0) or inter != 0.0:
        data = data * (slope if slope != 0.0 else 1.0) + inter
    return data
