#!/usr/bin/env python3
"""NIfTI-1 writing and comparing with the Python standard library only (numpy may be missing on CI machines), for the
scanner command-line checks (scanner_checks.sh).

  nifti_stdlib.py write PATH --dims NX NY NZ NT [--seed S] [--tr S] [--float] [--oblique]
      a random series (int16 values 0..2047; --float: float32, integers 0..3000 plus 0.5) on a fixed grid, sform only
      (--oblique: rotated, with the slice axis along the rows x columns normal, as dcm2niix writes DICOM data)
  nifti_stdlib.py compare GOT WANT [--volumes N] [--tol MM]
      exit 0 when GOT has WANT's dims, voxel values (exactly) and TR, and its affine within --tol mm; else each
      difference; --volumes: against WANT's first N volumes only
  nifti_stdlib.py expect GOT PREFIX --datum short|float [--tr S] [--tol MM]
      GOT against what an AFNI client sent (afni_rt_client.py): PREFIX.dims (NX NY NZ NT), PREFIX.raw (little-endian
      voxels, x fastest, volume after volume), PREFIX.affine (the 3x4 RAS affine, 12 numbers); --tr: pixdim[4] too
"""
import argparse
import gzip
import math
import random
import struct
import sys

_FORMATS = {2: "B", 4: "h", 8: "i", 16: "f", 64: "d", 512: "H", 256: "b", 768: "I"}


def grid_affine(oblique):
    """3x4 sform of the test grid: 2.5 x 2.5 x 3.5 mm voxels, negative determinant (i toward Left)."""
    sizes = (-2.5, 2.5, 3.5)
    if oblique:
        # rotation by 0.2 rad about the axis (0.3, 1, -0.4), Rodrigues' formula
        ax = (0.3, 1.0, -0.4)
        n = math.sqrt(sum(a * a for a in ax))
        x, y, z = (a / n for a in ax)
        c, s = math.cos(0.2), math.sin(0.2)
        t = 1 - c
        rot = [[t * x * x + c, t * x * y - s * z, t * x * z + s * y],
               [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
               [t * x * z - s * y, t * y * z + s * x, t * z * z + c]]
    else:
        rot = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    offset = (46.0, -38.0, -12.0)
    return [[rot[r][k] * sizes[k] for k in range(3)] + [offset[r]] for r in range(3)]


def write(path, dims, seed, tr, as_float, oblique):
    nx, ny, nz, nt = dims
    rng = random.Random(seed)
    count = nx * ny * nz * nt
    if as_float:
        data = struct.pack("<%df" % count, *(rng.randint(0, 3000) + 0.5 for _ in range(count)))
        datatype, bitpix = 16, 32
    else:  # random bytes with the high byte of each int16 cut to 0..7: values 0..2047, fast for large series
        data = bytearray(rng.randbytes(2 * count))
        data[1::2] = data[1::2].translate(bytes(b & 7 for b in range(256)))
        datatype, bitpix = 4, 16
    affine = grid_affine(oblique)
    hdr = bytearray(348)
    struct.pack_into("<i", hdr, 0, 348)
    struct.pack_into("<8h", hdr, 40, 4 if nt > 1 else 3, nx, ny, nz, nt, 1, 1, 1)
    struct.pack_into("<hh", hdr, 70, datatype, bitpix)
    voxel = [math.sqrt(sum(affine[r][k] ** 2 for r in range(3))) for k in range(3)]
    struct.pack_into("<8f", hdr, 76, -1.0, *voxel, tr, 0, 0, 0)  # qfac -1 (unused: qform_code 0)
    struct.pack_into("<f", hdr, 108, 352.0)  # vox_offset
    struct.pack_into("<2f", hdr, 112, 1.0, 0.0)  # scl_slope, scl_inter
    hdr[123] = 2 | 8  # xyzt_units: mm, s
    struct.pack_into("<hh", hdr, 252, 0, 1)  # qform 0, sform scanner
    for r in range(3):
        struct.pack_into("<4f", hdr, 280 + 16 * r, *affine[r])
    hdr[344:348] = b"n+1\0"
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(bytes(hdr) + b"\0\0\0\0" + data)


def read(path):
    """(dims (nx, ny, nz, nt), 3x4 affine from the sform (else the qform), voxel values, pixdim[4])."""
    raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    if struct.unpack_from("<i", raw, 0)[0] != 348:
        raise SystemExit(f"{path}: not a little-endian NIfTI-1 file")
    dim = struct.unpack_from("<8h", raw, 40)
    dims = tuple(dim[k] if k <= dim[0] else 1 for k in range(1, 5))
    datatype = struct.unpack_from("<h", raw, 70)[0]
    pixdim = struct.unpack_from("<8f", raw, 76)
    offset = int(struct.unpack_from("<f", raw, 108)[0])
    slope, inter = struct.unpack_from("<2f", raw, 112)
    qform_code, sform_code = struct.unpack_from("<hh", raw, 252)
    if datatype not in _FORMATS:
        raise SystemExit(f"{path}: NIfTI datatype {datatype} not handled")
    count = dims[0] * dims[1] * dims[2] * dims[3]
    values = list(struct.unpack_from("<%d%s" % (count, _FORMATS[datatype]), raw, offset))
    if slope not in (0.0, 1.0) or inter != 0.0:
        values = [v * (slope if slope != 0.0 else 1.0) + inter for v in values]
    if sform_code > 0:
        affine = [list(struct.unpack_from("<4f", raw, 280 + 16 * r)) for r in range(3)]
    elif qform_code > 0:
        b, c, d, qx, qy, qz = struct.unpack_from("<6f", raw, 256)
        a = math.sqrt(max(0.0, 1.0 - (b * b + c * c + d * d)))
        rot = [[a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)],
               [2 * (b * c + a * d), a * a + c * c - b * b - d * d, 2 * (c * d - a * b)],
               [2 * (b * d - a * c), 2 * (c * d + a * b), a * a + d * d - c * c - b * b]]
        qfac = -1.0 if pixdim[0] < 0 else 1.0
        scale = (pixdim[1], pixdim[2], pixdim[3] * qfac)
        affine = [[rot[r][k] * scale[k] for k in range(3)] + [(qx, qy, qz)[r]] for r in range(3)]
    else:
        raise SystemExit(f"{path}: neither sform nor qform is set")
    return dims, affine, values, pixdim[4]


def compare(got, want, tol, name):
    (got_dims, got_affine, got_values, got_tr), (want_dims, want_affine, want_values, want_tr) = got, want
    problems = []
    if want_tr is not None and abs(got_tr - want_tr) > 1e-6:
        problems.append(f"TR {got_tr}, want {want_tr}")
    if tuple(got_dims) != tuple(want_dims):
        problems.append(f"dims {got_dims}, want {tuple(want_dims)}")
    else:
        bad = [i for i, (g, w) in enumerate(zip(got_values, want_values)) if g != w]
        if bad:
            i = bad[0]
            problems.append(f"{len(bad)} voxels differ, first at flat index {i}: {got_values[i]} vs {want_values[i]}")
    worst = max(abs(got_affine[r][c] - want_affine[r][c]) for r in range(3) for c in range(4))
    if worst > tol:
        problems.append(f"affine differs by {worst:.6g} mm: {got_affine} vs {want_affine}")
    for p in problems:
        print(f"{name}: {p}")
    if not problems:
        print(f"{name}: {got_dims} equal voxel for voxel, affine within {worst:.2g} mm")
    return not problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("path")
    w.add_argument("--dims", type=int, nargs=4, required=True)
    w.add_argument("--seed", type=int, default=1)
    w.add_argument("--tr", type=float, default=1.5)
    w.add_argument("--float", action="store_true")
    w.add_argument("--oblique", action="store_true")
    c = sub.add_parser("compare")
    c.add_argument("got")
    c.add_argument("want")
    c.add_argument("--volumes", type=int)
    c.add_argument("--tol", type=float, default=1e-4)
    e = sub.add_parser("expect")
    e.add_argument("got")
    e.add_argument("prefix")
    e.add_argument("--datum", choices=("short", "float"), required=True)
    e.add_argument("--tr", type=float)
    e.add_argument("--tol", type=float, default=1e-4)
    a = parser.parse_args()
    if a.command == "write":
        write(a.path, a.dims, a.seed, a.tr, a.float, a.oblique)
        return 0
    got = read(a.got)
    if a.command == "compare":
        want = read(a.want)
        if a.volumes is not None:
            dims, affine, values, tr = want
            dims = dims[:3] + (a.volumes,)
            want = (dims, affine, values[:dims[0] * dims[1] * dims[2] * a.volumes], tr)
        return 0 if compare(got, want, a.tol, a.got) else 1
    raw = open(a.prefix + ".raw", "rb").read()
    fmt = "h" if a.datum == "short" else "f"
    want_values = list(struct.unpack("<%d%s" % (len(raw) // struct.calcsize(fmt), fmt), raw))
    numbers = [float(v) for v in open(a.prefix + ".affine").read().split()]
    want_affine = [numbers[4 * r:4 * r + 4] for r in range(3)]
    want_dims = tuple(int(v) for v in open(a.prefix + ".dims").read().split())
    return 0 if compare(got, (want_dims, want_affine, want_values, a.tr), a.tol, a.got) else 1


if __name__ == "__main__":
    sys.exit(main())
