#!/usr/bin/env python3
"""An AFNI real-time image source, as Dimon -rt / rtfeedme -host speak to afni -rt (docs/afni_rt.md, AFNI's
README.realtime), with the Python standard library only; for scanner_checks.sh.

  afni_rt_client.py CONTROL_PORT DATA_PORT OUT_DIR

Connects to 127.0.0.1:CONTROL_PORT, sends the control string "tcp:localhost:DATA_PORT\\0" and waits for the server to
close the control connection; then connects to DATA_PORT and sends two runs on that one connection:
  run 1  ACQUISITION_TYPE 3D+timing, DATUM short (LSB_FIRST), a sagittal S-I A-P L-R stack placed with XYZFIRST,
         TPATTERN alt+z; 4 volumes, one block each; ended by AFNI's end marker (a volume-sized block)
  run 2  ACQUISITION_TYPE 2D+zt, DATUM float, BYTEORDER MSB_FIRST, an OBLIQUE_XFORM grid, slices sent in ZORDER alt
         order (0, 2, 4, ..., 1, 3, ...); 3 volumes; ended by closing the connection
For each run it writes OUT_DIR/run-NN.raw (the voxels sent, little-endian, x fastest, volume after volume),
run-NN.affine (the NIfTI RAS affine the header implies, 12 numbers, rows of the 3x4 matrix, computed here from the
rules of docs/afni_rt.md: AFNI's LPS geometry with x and y negated) and run-NN.dims (NX NY NZ NT).
"""
import math
import os
import random
import socket
import struct
import sys
import time

END_MARKER = b"Et Earello Endorenna utulien!!"
PATIENCE_S = 60  # a bound that only turns a hang into a failure


def connect(port):
    """Connects to 127.0.0.1:port, retrying until the server listens (bounded by PATIENCE_S)."""
    deadline = time.monotonic() + PATIENCE_S
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=PATIENCE_S)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def ras(m_lps):
    """NIfTI RAS 3x4 affine from AFNI's ijk -> DICOM (LPS) 3x4 matrix: x and y negated."""
    return [[-v for v in m_lps[0]], [-v for v in m_lps[1]], list(m_lps[2])]


def write_expected(out, run, dims, raw_le, affine):
    with open(os.path.join(out, f"{run}.raw"), "wb") as f:
        f.write(raw_le)
    with open(os.path.join(out, f"{run}.affine"), "w") as f:
        f.write(" ".join(repr(v) for row in affine for v in row) + "\n")
    with open(os.path.join(out, f"{run}.dims"), "w") as f:
        f.write(" ".join(str(d) for d in dims) + "\n")


def run_one(rng):
    """Run 1: 3D+timing, short; returns (header, blocks, dims, little-endian voxels, expected RAS affine)."""
    nx, ny, nz, nt = 16, 12, 5, 4
    # XYFOV 48 36 20 over 16 x 12 x 5: 3 x 3 x 4 mm. XYZAXES S-I A-P L-R: i toward inferior (-z LPS), j toward
    # posterior (+y), k toward the right (-x). XYZFIRST 30S 20A 10L: first voxel 30 mm superior (z = 30), 20 mm
    # anterior (y = -20), 10 mm left (x = 10).
    header = ("ACQUISITION_TYPE 3D+timing\nTR 1.25\nXYMATRIX 16 12 5\nXYFOV 48 36 20\nXYZAXES S-I A-P L-R\n"
              "XYZFIRST 30S 20A 10L\nDATUM short\nBYTEORDER LSB_FIRST\nTPATTERN alt+z\nNUMVOL 4\n")
    m_lps = [[0, 0, -4, 10], [0, 3, 0, -20], [-3, 0, 0, 30]]
    count = nx * ny * nz
    blocks, raw = [], b""
    for _ in range(nt):
        values = [rng.randint(-2000, 2000) for _ in range(count)]
        block = struct.pack("<%dh" % count, *values)
        blocks.append(block)
        raw += block
    return header, blocks, (nx, ny, nz, nt), raw, ras(m_lps), 2 * count


def run_two(rng):
    """Run 2: 2D+zt, float, big-endian, oblique; slices sent in alternating order."""
    nx, ny, nz, nt = 10, 8, 6, 3
    sizes = (2.0, 2.5, 3.0)
    # a rotation by 0.3 rad about (1, -0.5, 0.25), Rodrigues' formula
    n = math.sqrt(1 + 0.25 + 0.0625)
    x, y, z = 1 / n, -0.5 / n, 0.25 / n
    c, s = math.cos(0.3), math.sin(0.3)
    t = 1 - c
    rot = [[t * x * x + c, t * x * y - s * z, t * x * z + s * y],
           [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
           [t * x * z - s * y, t * y * z + s * x, t * z * z + c]]
    origin = (-7.5, 12.25, 31.0)
    m_lps = [[rot[r][k] * sizes[k] for k in range(3)] + [origin[r]] for r in range(3)]
    xform = [v for row in m_lps for v in row] + [0, 0, 0, 1]
    header = ("ACQUISITION_TYPE 2D+zt\nTR 2\nXYMATRIX 10 8 6\nXYFOV 20 20\nZDELTA 3\nXYZAXES R-L A-P I-S\n"
              "OBLIQUE_XFORM " + " ".join("%.9f" % v for v in xform) + "\n"
              "DATUM float\nBYTEORDER MSB_FIRST\nZORDER alt\nDRIVE_AFNI OPEN_WINDOW axialimage\n")
    slice_count = nx * ny
    order = list(range(0, nz, 2)) + list(range(1, nz, 2))
    blocks, raw = [], b""
    for _ in range(nt):
        volume = [[rng.randint(0, 4000) + 0.25 for _ in range(slice_count)] for _ in range(nz)]
        for k in order:  # sent in ZORDER alt order, big-endian
            blocks.append(struct.pack(">%df" % slice_count, *volume[k]))
        raw += b"".join(struct.pack("<%df" % slice_count, *volume[k]) for k in range(nz))
    return header, blocks, (nx, ny, nz, nt), raw, ras(m_lps), 4 * slice_count


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    control_port, data_port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rng = random.Random(7)
    runs = [run_one(rng), run_two(rng)]
    for number, (_, _, dims, raw, affine, _) in enumerate(runs, start=1):
        write_expected(out, f"run-{number:02d}", dims, raw, affine)

    control = connect(control_port)
    control.sendall(f"tcp:localhost:{data_port}".encode() + b"\0")
    while control.recv(1024):  # the server closes the control connection once it listens on the data port
        pass
    control.close()

    data = connect(data_port)
    header, blocks, _, _, _, image_bytes = runs[0]
    data.sendall(header.encode() + b"\0")
    for block in blocks:
        data.sendall(block)
    data.sendall(END_MARKER + b"\0" * (image_bytes - len(END_MARKER)))
    header, blocks, _, _, _, _ = runs[1]
    data.sendall(header.encode() + b"\0")
    for block in blocks:
        data.sendall(block)
    data.shutdown(socket.SHUT_WR)
    while data.recv(1024):  # the server closes its side once it has read everything
        pass
    data.close()
    print(f"afni_rt_client: sent {len(runs)} runs to control port {control_port}, data port {data_port}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
