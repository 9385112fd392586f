#!/usr/bin/env python3
"""Checks a viewer snapshot (PNG + PNG.json layout written by rtfmri-view --snapshot); standard library only.

  check_snapshot.py SNAPSHOT.png --min-trs N [--replay] [--outlines] [--qa [--cnr]]
                                                 exit 0 when every check passes, 1 with the failures
                                                 (--replay: a recorded session, no device reported;
                                                  --outlines: ROI outlines must be drawn over the slices;
                                                  --qa: the server sent QA, its panel must show it;
                                                  --cnr: and a design's CNR map and sliding-window tSNR median)
  check_snapshot.py --self-test                  proves the checks reject a blank and a panel-less picture

Checks: every panel is present inside the picture; the three slices are not blank (enough non-black pixels with
contrast); the traces are drawn (coloured pixels in the motion, FD, feedback and latency plots); the connectivity heat
map has coloured cells; the snapshot was taken after at least N TRs; the device was reported; with --outlines, the
first ROI's outline colour (magenta, which no map colour produces) is in the slices and the viewer counted outline
pixels; with --qa, the QA panel shows QA (the viewer saw it), its traces and carpet are drawn and the tSNR map has
coloured pixels; with --cnr, the CNR map is drawn beside it with hot and cool pixels and the viewer got the CNR p95 and
the sliding-window tSNR median; the frame-time
statistics were reported (printed, not judged: how fast frames are depends on the machine and what runs beside it,
so keeping up is measured in docs/performance.md, not asserted here).
"""
import json
import struct
import sys
import zlib

PANELS = ["panel:Slices", "panel:Motion", "panel:Feedback", "panel:Connectivity", "panel:Latency", "panel:Status",
          "panel:QA"]
SLICES = ["slice:axial", "slice:coronal", "slice:sagittal"]
TRACES = ["plot:translations", "plot:rotations", "plot:fd", "plot:feedback", "plot:latency_bars"]
QA_TRACES = ["plot:qa_fd", "plot:qa_dvars", "plot:qa_global"]  # defined from the second volume on


def read_png(path):
    """Decodes 8-bit RGBA PNGs without interlace (what rtfmri-view writes); all five filter types."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            if depth != 8 or colour != 6:
                raise ValueError("not 8-bit RGBA")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride, rows, prev = width * 4, [], bytearray(width * 4)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 4] if i >= 4 else 0
            b = prev[i]
            c = prev[i - 4] if i >= 4 else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, rows


def pixels(rows, rect):
    x, y, w, h = (int(round(v)) for v in rect)
    for yy in range(max(y, 0), min(y + h, len(rows))):
        row = rows[yy]
        for xx in range(max(x, 0), min(x + w, len(row) // 4)):
            yield row[4 * xx], row[4 * xx + 1], row[4 * xx + 2]


def is_outline(p):
    """The first ROI's outline colour, magenta (255, 0, 255); the hot and cool maps never produce it."""
    return p[0] > 240 and p[1] < 20 and p[2] > 240


def check_cnr(rows, layout):
    """With a design: the CNR map in hot (positive) and cool (negative) colours, its p95 and the sliding tSNR median."""
    failures = []
    rects = layout.get("rects", {})
    qa = layout.get("qa", {})
    if not qa.get("cnr_map"):
        failures.append(f"CNR: the viewer got no CNR map ({qa})")
    for key in ("cnr_p95", "sliding_tsnr_median"):
        if not isinstance(qa.get(key), (int, float)):
            failures.append(f"CNR: qa.{key} not received ({qa.get(key)})")
    for name in ("qa:cnr", "qa:cnr_scale"):
        r = rects.get(name)
        if r is None or r[2] < 20 or r[3] < 20:
            failures.append(f"{name}: missing from the layout or empty ({r})")
    if "qa:cnr" in rects:
        hot = sum(p[0] > 120 and p[0] > p[2] + 60 for p in pixels(rows, rects["qa:cnr"]))
        cool = sum(p[2] > 120 and p[2] > p[0] + 60 for p in pixels(rows, rects["qa:cnr"]))
        if hot < 20 or cool < 20:
            failures.append(f"qa:cnr: not a signed map's colours ({hot} hot, {cool} cool pixels)")
        elif not failures:
            print(f"check_snapshot: CNR map drawn ({hot} hot, {cool} cool pixels; p95 {qa['cnr_p95']:.2f}, sliding "
                  f"tSNR median {qa['sliding_tsnr_median']:.1f})")
    return failures


def check_qa(rows, layout):
    """The QA panel shows what the server sent: traces, a carpet with contrast, a tSNR map in colour."""
    failures = []
    rects = layout.get("rects", {})
    qa = layout.get("qa", {})
    if not qa.get("seen"):
        return [f"QA: the viewer saw no QA in the stream ({qa})"]
    for name in QA_TRACES + ["qa:carpet", "qa:tsnr"]:
        r = rects.get(name)
        if r is None or r[2] < 20 or r[3] < 20:
            failures.append(f"{name}: missing from the layout or empty ({r})")
    for name in QA_TRACES:
        if name in rects:
            coloured = sum(max(p) > 90 and max(p) - min(p) > 50 or min(p) > 200 for p in pixels(rows, rects[name]))
            if coloured < 20:
                failures.append(f"{name}: nothing drawn ({coloured} trace pixels)")
    if "qa:carpet" in rects:
        values = [p[0] for p in pixels(rows, rects["qa:carpet"]) if p[0] == p[1] == p[2]]
        mean = sum(values) / max(len(values), 1)
        spread = (sum((v - mean) ** 2 for v in values) / max(len(values), 1)) ** 0.5
        if len(values) < 100 or spread < 10:
            failures.append(f"qa:carpet: blank ({len(values)} grey pixels, spread {spread:.1f})")
    if "qa:tsnr" in rects:
        hot = sum(p[0] > 120 and p[0] > p[2] + 60 for p in pixels(rows, rects["qa:tsnr"]))
        if hot < 50:
            failures.append(f"qa:tsnr: no tSNR colours ({hot} pixels)")
    if not failures:
        print(f"check_snapshot: QA panel drawn ({qa.get('samples')} samples, carpet {qa.get('carpet_columns')} x "
              f"{qa.get('carpet_rows')}, {qa.get('alarms')} alarms listed)")
    return failures


def check(width, height, rows, layout, min_trs, replay=False, outlines=False, qa=False, cnr=False):
    failures = []
    rects = layout.get("rects", {})
    for name in PANELS + SLICES + TRACES + ["matrix:connectivity", "colour_bar"]:
        r = rects.get(name)
        if r is None:
            failures.append(f"{name}: missing from the layout")
        elif r[2] < 20 or r[3] < 20 or r[0] < -1 or r[1] < -1 or r[0] + r[2] > width + 1 or r[1] + r[3] > height + 1:
            failures.append(f"{name}: rectangle {r} is empty or outside the {width}x{height} picture")
    for name in SLICES:
        if name not in rects:
            continue
        values = [0.299 * r + 0.587 * g + 0.114 * b for r, g, b in pixels(rows, rects[name])]
        if not values:
            failures.append(f"{name}: no pixels")
            continue
        lit = sum(v > 30 for v in values) / len(values)
        mean = sum(values) / len(values)
        spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        if lit < 0.05 or spread < 15:
            failures.append(f"{name}: blank ({lit:.0%} of pixels lit, spread {spread:.1f})")
    for name in TRACES + ["matrix:connectivity"]:
        if name not in rects:
            continue
        coloured = sum(max(p) > 90 and max(p) - min(p) > 50 or min(p) > 200 for p in pixels(rows, rects[name]))
        if coloured < 40:
            failures.append(f"{name}: nothing drawn ({coloured} trace pixels)")
    if outlines:
        magenta = sum(is_outline(p) for name in SLICES if name in rects for p in pixels(rows, rects[name]))
        if magenta < 10 or layout.get("roi_outline_pixels", 0) <= 0:
            failures.append(f"ROI outlines: {magenta} outline pixels in the slices, the viewer drew "
                            f"{layout.get('roi_outline_pixels', 0)} (ROIs {layout.get('roi_labels')})")
        else:
            print(f"check_snapshot: ROI outlines drawn ({magenta} screen pixels, {layout['roi_outline_pixels']} slice "
                  f"pixels; ROIs {layout.get('roi_labels')})")
    if qa:
        failures += check_qa(rows, layout)
    if cnr:
        failures += check_cnr(rows, layout)
    if layout.get("trs", 0) < min_trs:
        failures.append(f"only {layout.get('trs', 0)} TRs shown, expected at least {min_trs}")
    if min_trs > 0 and not replay and not layout.get("device"):
        failures.append("the device in use was not reported")
    work = layout.get("frame_work", {})
    if min_trs > 0 and not all(isinstance(work.get(k), (int, float)) for k in ("p99_ms", "max_ms")):
        failures.append(f"no frame-time statistics in the layout: {work}")
    elif min_trs > 0:
        print(f"check_snapshot: frame work p99 {work['p99_ms']:.1f} ms, max {work['max_ms']:.1f} ms (not judged)")
    return failures


def self_test():
    layout = {"rects": {}, "trs": 0}
    width = height = 64
    blank = [bytearray(width * 4) for _ in range(height)]
    failures = check(width, height, blank, layout, 1)
    assert any("missing" in f for f in failures), failures
    layout = {"rects": {n: [0, 0, 64, 64] for n in PANELS + SLICES + TRACES + ["matrix:connectivity", "colour_bar"]},
              "trs": 5, "device": "x", "frame_work": {"p99_ms": 10, "max_ms": 20}}
    failures = check(width, height, blank, layout, 1)
    assert any("blank" in f for f in failures) and any("nothing drawn" in f for f in failures), failures
    del layout["frame_work"]
    assert any("frame-time" in f for f in check(width, height, blank, layout, 1))
    layout["roi_outline_pixels"] = 12
    assert any("ROI outlines" in f for f in check(width, height, blank, layout, 1, outlines=True))
    assert any("QA" in f for f in check(width, height, blank, layout, 1, qa=True))
    layout["qa"] = {"seen": True}
    for name in QA_TRACES + ["qa:carpet", "qa:tsnr"]:
        layout["rects"][name] = [0, 0, 64, 64]
    failures = check(width, height, blank, layout, 1, qa=True)
    assert all(any(f.startswith(n) for f in failures) for n in QA_TRACES + ["qa:carpet", "qa:tsnr"]), failures
    failures = check(width, height, blank, layout, 1, qa=True, cnr=True)
    assert any("no CNR map" in f for f in failures) and any("qa:cnr" in f for f in failures), failures
    layout["qa"].update({"cnr_map": True, "cnr_p95": 2.0, "sliding_tsnr_median": 40.0})
    layout["rects"]["qa:cnr"] = layout["rects"]["qa:cnr_scale"] = [0, 0, 64, 64]
    assert any(f.startswith("qa:cnr: not a signed") for f in check(width, height, blank, layout, 1, qa=True, cnr=True))
    print("check_snapshot: self-test passed (a blank picture, a missing layout, missing outlines, a blank QA panel and "
          "a missing or blank CNR map are rejected)")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    path = sys.argv[1]
    min_trs = int(sys.argv[sys.argv.index("--min-trs") + 1]) if "--min-trs" in sys.argv else 1
    width, height, rows = read_png(path)
    layout = json.load(open(path + ".json"))
    failures = check(width, height, rows, layout, min_trs, "--replay" in sys.argv, "--outlines" in sys.argv,
                     "--qa" in sys.argv, "--cnr" in sys.argv)
    for f in failures:
        print("check_snapshot: FAIL", f)
    if not failures:
        print(f"check_snapshot: {path} ({width}x{height}, {layout.get('trs')} TRs): every panel present, slices not "
              "blank, traces drawn")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
