#!/usr/bin/env python3
"""Whether DICOM files are complete, with the Python standard library only (an independent reader: not GDCM, which
scanner watch uses, and gdcmdump exits 0 on a file cut inside its pixel data). For scanner_checks.sh.

  dicom_complete.py FILE...   exit 0 when every file is a whole explicit-VR little-endian Part 10 file: preamble and
                              "DICM", every element (sequences and items of defined or undefined length included) inside
                              the file, nothing after the last one, and Pixel Data of exactly
                              Rows x Columns x NumberOfFrames x BitsAllocated / 8 bytes; else one line per bad file.
"""
import struct
import sys

_LONG_VRS = {b"OB", b"OD", b"OF", b"OL", b"OV", b"OW", b"SQ", b"SV", b"UC", b"UN", b"UR", b"UT", b"UV"}
_UNDEFINED = 0xFFFFFFFF
_ITEM, _ITEM_END, _SEQUENCE_END = (0xFFFE, 0xE000), (0xFFFE, 0xE00D), (0xFFFE, 0xE0DD)


class Incomplete(Exception):
    pass


def _need(data, pos, n, what):
    if pos + n > len(data):
        raise Incomplete(f"{what} at byte {pos} needs {n} bytes, the file ends at {len(data)}")


def _parse(data, pos, top, until=None):
    """Elements from pos until the tag `until` (undefined-length item/sequence) or the end of the data; returns the
    position after them. Top-level values the check needs go into `top`."""
    while pos < len(data):
        _need(data, pos, 8, "element header")
        tag = struct.unpack_from("<HH", data, pos)
        if tag[0] == 0xFFFE:  # item or delimiter: 4-byte length, no VR
            length = struct.unpack_from("<I", data, pos + 4)[0]
            pos += 8
            if tag == until:
                return pos
            if tag != _ITEM:
                raise Incomplete(f"unexpected delimiter ({tag[0]:04x},{tag[1]:04x}) at byte {pos - 8}")
            if length == _UNDEFINED:
                pos = _parse(data, pos, None, _ITEM_END)
            else:
                _need(data, pos, length, "item")
                pos += length
            continue
        vr = data[pos + 4:pos + 6]
        if vr in _LONG_VRS:
            _need(data, pos, 12, "element header")
            length = struct.unpack_from("<I", data, pos + 8)[0]
            pos += 12
        else:
            length = struct.unpack_from("<H", data, pos + 6)[0]
            pos += 8
        if length == _UNDEFINED:
            if vr != b"SQ":
                raise Incomplete(f"({tag[0]:04x},{tag[1]:04x}) {vr!r} of undefined length")
            pos = _parse(data, pos, None, _SEQUENCE_END)
            continue
        _need(data, pos, length, f"value of ({tag[0]:04x},{tag[1]:04x})")
        if top is not None:
            top[tag] = data[pos:pos + length]
        pos += length
    if until is not None:
        raise Incomplete(f"the file ends before the delimiter ({until[0]:04x},{until[1]:04x})")
    return pos


def check(path):
    data = open(path, "rb").read()
    if len(data) < 132 or data[128:132] != b"DICM":
        raise Incomplete("no DICM preamble")
    top = {}
    _parse(data, 132, top)
    syntax = top.get((0x0002, 0x0010), b"").rstrip(b"\0 ")
    if syntax != b"1.2.840.10008.1.2.1":
        raise Incomplete(f"transfer syntax {syntax!r}, only explicit VR little endian is read here")
    for tag, name in (((0x0028, 0x0010), "Rows"), ((0x0028, 0x0011), "Columns"), ((0x0028, 0x0100), "BitsAllocated"),
                      ((0x7FE0, 0x0010), "PixelData")):
        if tag not in top:
            raise Incomplete(f"no {name}")
    rows, columns, bits = (struct.unpack("<H", top[t])[0] for t in ((0x0028, 0x0010), (0x0028, 0x0011),
                                                                    (0x0028, 0x0100)))
    frames = int(top.get((0x0028, 0x0008), b"1").rstrip(b"\0 ") or 1)
    want = rows * columns * frames * bits // 8
    got = len(top[(0x7FE0, 0x0010)])
    if got not in (want, want + 1):  # + 1: padding to an even length
        raise Incomplete(f"Pixel Data has {got} bytes, {rows} x {columns} x {frames} x {bits} bits make {want}")


def main(paths):
    bad = 0
    for path in paths:
        try:
            check(path)
        except Incomplete as e:
            print(f"{path}: incomplete: {e}")
            bad += 1
    print(f"{len(paths) - bad} of {len(paths)} DICOM files complete")
    return 1 if bad or not paths else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
