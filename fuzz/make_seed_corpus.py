#!/usr/bin/env python3
"""Writes the NIfTI fuzzing seeds into tests/data/nifti_corpus (standard library only, no nibabel).

valid_* files are well-formed and must load; bad_* files must be rejected (the replay test checks both).
Usage: python3 fuzz/make_seed_corpus.py [OUTDIR]
"""
import gzip
import math
import os
import struct
import sys


def nifti1(dims, datatype, bitpix, values, fmt, big=False, pixdim=(1, 1, 1, 1, 1, 0, 0, 0), slope=0.0,
           inter=0.0, units=10, qform=0, sform=1, quatern=(0, 0, 0, 0, 0, 0), srow=None, vox_offset=352,
           extension=b"", magic=b"n+1\0", descrip=b"rtfmri seed"):
    e = ">" if big else "<"
    srow = srow or ((pixdim[1], 0, 0, 0), (0, pixdim[2], 0, 0), (0, 0, pixdim[3], 0))
    h = bytearray(348)
    struct.pack_into(e + "i", h, 0, 348)
    struct.pack_into(e + "8h", h, 40, *(list(dims) + [1] * (8 - len(dims))))
    struct.pack_into(e + "hh", h, 70, datatype, bitpix)
    struct.pack_into(e + "8f", h, 76, *pixdim)
    struct.pack_into(e + "3f", h, 108, vox_offset, slope, inter)
    h[123] = units
    h[148:148 + len(descrip)] = descrip
    struct.pack_into(e + "hh", h, 252, qform, sform)
    struct.pack_into(e + "6f", h, 256, *quatern)
    struct.pack_into(e + "12f", h, 280, *[v for row in srow for v in row])
    h[344:348] = magic
    ext = (b"\x01\0\0\0" + extension) if extension else b"\0\0\0\0"
    body = bytes(h) + ext
    body += b"\0" * (int(vox_offset) - len(body))
    return body + struct.pack(e + str(len(values)) + fmt, *values)


def nifti2(dims, datatype, bitpix, values, fmt, big=False, pixdim=(1, 1, 1, 1, 1, 0, 0, 0), slope=0.0,
           inter=0.0, units=10, sform=1):
    e = ">" if big else "<"
    h = bytearray(540)
    struct.pack_into(e + "i", h, 0, 540)
    h[4:12] = b"n+2\0\r\n\x1a\n"
    struct.pack_into(e + "hh", h, 12, datatype, bitpix)
    struct.pack_into(e + "8q", h, 16, *(list(dims) + [1] * (8 - len(dims))))
    struct.pack_into(e + "8d", h, 104, *pixdim)
    struct.pack_into(e + "q2d", h, 168, 544, slope, inter)
    struct.pack_into(e + "ii", h, 344, 0, sform)
    struct.pack_into(e + "12d", h, 400, pixdim[1], 0, 0, -10, 0, pixdim[2], 0, 20, 0, 0, pixdim[3], -30)
    struct.pack_into(e + "i", h, 500, units)
    return bytes(h) + b"\0\0\0\0" + struct.pack(e + str(len(values)) + fmt, *values)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                                                             "nifti_corpus")
    os.makedirs(out, exist_ok=True)
    c45 = math.sqrt(0.5)
    seeds = {
        "valid_n1_f32_3d.nii": nifti1((3, 3, 2, 2), 16, 32, [i * 0.5 - 1 for i in range(12)], "f", qform=1,
                                      quatern=(0, 0, 0, -1, -2, -3),
                                      srow=((1, 0, 0, -1), (0, 1, 0, -2), (0, 0, 1, -3))),
        "valid_n1_i16_4d_scaled_ms.nii": nifti1((4, 2, 2, 2, 3), 4, 16, list(range(-12, 12)), "h",
                                                pixdim=(1, 3, 3, 4, 1500, 0, 0, 0), slope=0.5, inter=10, units=2 | 16),
        "valid_n1_u8_be_qform.nii": nifti1((3, 3, 3, 1), 2, 8, list(range(9)), "B", big=True, qform=1, sform=0,
                                           pixdim=(-1, 2, 2, 2, 0, 0, 0, 0), quatern=(0, 0, c45, 5, 6, 7)),
        "valid_n1_ext.nii": nifti1((3, 2, 2, 1), 8, 32, [1, -2, 3, -4], "i", vox_offset=368,
                                   extension=struct.pack("<ii", 16, 6) + b"comment!"),
        "valid_n2_f64.nii": nifti2((3, 2, 2, 2), 64, 64, [0.25 * i for i in range(8)], "d"),
        "valid_n2_u16_5d_be.nii": nifti2((5, 2, 2, 1, 2, 1), 512, 16, list(range(8)), "H", big=True,
                                         pixdim=(1, 2, 2, 2, 2, 1, 0, 0)),
        "bad_complex.nii": nifti1((3, 2, 1, 1), 32, 64, [0, 0, 0, 0], "f"),
        "bad_dim5.nii": nifti1((5, 2, 1, 1, 1, 2), 2, 8, [1, 2, 3, 4], "B"),
        "bad_nan_inter.nii": nifti1((3, 2, 1, 1), 16, 32, [1, 2], "f", slope=2.0, inter=float("nan")),
        "bad_truncated_data.nii": nifti1((3, 4, 4, 4), 16, 32, [1.0] * 20, "f"),
        "bad_analyze.nii": nifti1((3, 2, 1, 1), 2, 8, [1, 2], "B", magic=b"\0\0\0\0"),
    }
    i16_4d = nifti1((4, 3, 2, 2, 2), 4, 16, [i * 7 - 40 for i in range(24)], "h", pixdim=(1, 2, 2, 3, 2, 0, 0, 0))
    seeds["valid_n1_i16_4d.nii.gz"] = gzip.compress(i16_4d, mtime=0)
    seeds["bad_gz_truncated.nii.gz"] = gzip.compress(i16_4d, mtime=0)[:-20]
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds ({sum(len(d) for d in seeds.values())} bytes) to {out}")


if __name__ == "__main__":
    main()
