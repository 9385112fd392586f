#!/usr/bin/env python3
"""Compares two trees of command outputs file by file: the work folders of the CLI checks (build/tests/cli/work-*)
of two builds, to show that a change left every output file as it was.

    scripts/compare_outputs.py BEFORE_DIR AFTER_DIR [--ignore-key NAME ...] [--list]

A file is "identical" when its bytes are; a .nii.gz whose bytes differ is compared decompressed (gzip headers hold no
data); a .json / .jsonl file whose bytes differ is compared as data after dropping the keys that measure the run
rather than its result (times, dates, process ids, host names, how chunks were dealt to devices: --ignore-key adds
more); a DICOM file (sim dicom's exports) whose bytes differ is compared as its pixel data, byte for byte, and
gdcmdump's listing without its UIDs, which are random for every export. Logs (*.log, *.txt captured from stdout) hold
timings and paths and are skipped, and so are the live server's latency records (latency.jsonl, latency_summary.json
and the listings of their sizes), which measure the run. Prints one line per file that differs and a summary; exits 1
when any result file differs or is missing on one side."""
import argparse
import gzip
import json
import os
import re
import subprocess
import sys

VOLATILE = re.compile(r"(second|_s$|^s$|time|date|created|elapsed|duration_ms|_ms$|pid|host|eta|rate|per_s|"
                      r"throughput|started|finished|wall|version|speedup|efficiency|chunks_per_device)", re.IGNORECASE)
SKIP = re.compile(r"(\.log$|\.out$|\.err$|stdout|stderr|\.partial|/\.rtfmri-partial-|latency\.jsonl$|"
                  r"latency_summary\.json$|/files\.txt$|/tmpfs\.txt$)")
DICOM = re.compile(r"(\.dcm$|\.MRDC\.\d+$|/export-[^/]+/)")


def load_json(path):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    if path.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def strip(value, extra):
    if isinstance(value, dict):
        return {k: strip(v, extra) for k, v in value.items() if not VOLATILE.search(k) and k not in extra}
    if isinstance(value, list):
        return [strip(v, extra) for v in value]
    if isinstance(value, str) and re.match(r"^/tmp/|/build[^/]*/", value):
        return "<path>"
    return value


def dicom_listing(path):
    """gdcmdump's listing of a DICOM file without its UIDs (VR UI) and the group lengths that count their bytes."""
    text = subprocess.run(["gdcmdump", path], capture_output=True, text=True, check=True).stdout
    keep = [line for line in text.splitlines()
            if " UI " not in line and not line.startswith("(0002,0000)") and "2.25." not in line]
    return "\n".join(keep)


def same(before, after, extra):
    with open(before, "rb") as f:
        a = f.read()
    with open(after, "rb") as f:
        b = f.read()
    if a == b:
        return True, "bytes"
    if before.endswith(".gz"):
        try:
            return gzip.decompress(a) == gzip.decompress(b), "decompressed"
        except OSError:
            return False, "bytes"
    if DICOM.search(before) and a[128:132] == b"DICM":
        try:
            pixels = b"\xe0\x7f\x10\x00"  # (7FE0,0010) Pixel Data, little endian: compared byte for byte
            same_pixels = a[a.rfind(pixels):] == b[b.rfind(pixels):]
            return same_pixels and dicom_listing(before) == dicom_listing(after), "DICOM without UIDs"
        except (OSError, subprocess.CalledProcessError):
            return False, "bytes"
    if before.endswith((".json", ".jsonl")):
        try:
            return strip(load_json(before), extra) == strip(load_json(after), extra), "data"
        except (ValueError, UnicodeDecodeError):
            return False, "bytes"
    return False, "bytes"


def files(root):
    out = set()
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.relpath(os.path.join(folder, name), root)
            if not SKIP.search("/" + path):
                out.add(path)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--ignore-key", action="append", default=[])
    parser.add_argument("--list", action="store_true", help="also list the files that are the same, and how")
    args = parser.parse_args()
    before, after = files(args.before), files(args.after)
    counts = {"bytes": 0, "decompressed": 0, "data": 0, "DICOM without UIDs": 0}
    differ = []
    for path in sorted(before | after):
        if path not in after or path not in before:
            differ.append(f"{path}: only {'before' if path in before else 'after'}")
            continue
        ok, how = same(os.path.join(args.before, path), os.path.join(args.after, path), set(args.ignore_key))
        if ok:
            counts[how] += 1
            if args.list:
                print(f"same ({how}): {path}")
        else:
            differ.append(f"{path}: differs")
    for line in differ:
        print(line)
    print(f"{sum(counts.values())} files the same ({counts['bytes']} byte for byte, {counts['decompressed']} "
          f"decompressed, {counts['data']} as data without run-time fields, {counts['DICOM without UIDs']} DICOM "
          f"without UIDs), {len(differ)} differ or missing")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
