#!/usr/bin/python3
"""Opens a qa_report.html in headless Chromium and checks what a reader would see: every <img> decoded by the browser
(complete, naturalWidth > 0), no table without a data cell, no resource from outside the page.

A copy of the page goes to a temporary folder with a small script added before </body>; on the window's load event
it writes its findings as JSON into <pre id="browser-check">, and `chromium --headless --dump-dom` prints the DOM
after the load. The page itself needs no script: the one added here only reads it.

usage: check_report_in_browser.py [--self-test] [--min-images N] REPORT.html
  --self-test     first check pages made here: a good one must pass, one with a broken image and an empty table must
                  fail with exactly those counts (proves the check can fail)
  --min-images N  also fail when the page has fewer than N images
Exit status 0: all well; 1: the page failed (the reasons printed); 2: no browser, or the browser gave no verdict.
"""

import argparse
import base64
import html
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

PROBE = """<script>
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  var failed = images.filter(function (i) { return !(i.complete && i.naturalWidth > 0 && i.naturalHeight > 0); });
  var tables = Array.prototype.slice.call(document.querySelectorAll("table"));
  var empty = tables.filter(function (t) { return t.querySelectorAll("td").length === 0; });
  var external = [];
  document.querySelectorAll("[src], link[href]").forEach(function (e) {
    var url = e.getAttribute("src") || e.getAttribute("href") || "";
    if (url.indexOf("data:") !== 0) external.push(e.tagName + " " + url);
  });
  var verdict = {
    images: images.length,
    loaded: images.length - failed.length,
    failed: failed.length,
    failed_images: failed.map(function (i) { return (i.alt || "(no alt)") + " " + i.src.slice(0, 40); }),
    sizes: images.map(function (i) { return [i.naturalWidth, i.naturalHeight]; }),
    tables: tables.length,
    empty_tables: empty.length,
    external: external,
    title: document.title
  };
  var pre = document.createElement("pre");
  pre.id = "browser-check";
  pre.textContent = JSON.stringify(verdict);
  document.body.appendChild(pre);
});
</script>
"""


def find_browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def browser_verdict(browser, page):
    """The probe's JSON for `page` (a path), or exits 2 when the browser gives none."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    at = text.rfind("</body>")
    if at < 0:
        print(f"check_report_in_browser: {page} has no </body>", file=sys.stderr)
        sys.exit(1)
    with tempfile.TemporaryDirectory(prefix="qa-report-browser-") as tmp:
        copy = os.path.join(tmp, "report.html")
        with open(copy, "w", encoding="utf-8") as f:
            f.write(text[:at] + PROBE + text[at:])
        command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                   f"--user-data-dir={os.path.join(tmp, 'profile')}", "--virtual-time-budget=10000", "--dump-dom",
                   "file://" + copy]
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        except subprocess.TimeoutExpired:
            print(f"check_report_in_browser: {browser} did not finish within 120 s", file=sys.stderr)
            sys.exit(2)
    start = run.stdout.find('<pre id="browser-check">')
    end = run.stdout.find("</pre>", start)
    if run.returncode != 0 or start < 0 or end < 0:
        print(f"check_report_in_browser: no verdict from {browser} (exit {run.returncode}); its stderr:\n"
              f"{run.stderr[-3000:]}", file=sys.stderr)
        sys.exit(2)
    return json.loads(html.unescape(run.stdout[start + len('<pre id="browser-check">'):end]))


def problems(verdict, min_images):
    out = []
    if verdict["failed"]:
        out.append(f"{verdict['failed']} of {verdict['images']} images did not load: "
                   + "; ".join(verdict["failed_images"]))
    if verdict["empty_tables"]:
        out.append(f"{verdict['empty_tables']} of {verdict['tables']} tables have no data cell")
    if verdict["external"]:
        out.append("resources from outside the page: " + "; ".join(verdict["external"]))
    if verdict["images"] < min_images:
        out.append(f"{verdict['images']} images, expected at least {min_images}")
    return out


def check(browser, page, min_images):
    """Prints the verdict and the problems; returns the problems."""
    verdict = browser_verdict(browser, page)
    summary = {k: verdict[k] for k in ("images", "loaded", "failed", "tables", "empty_tables")}
    print(f"{page}: {json.dumps(summary)}")
    found = problems(verdict, min_images)
    for p in found:
        print(f"  FAIL: {p}")
    return found


def tiny_png():
    """A 2x1 RGB PNG (red, blue), written here so the self-test does not depend on the C++ encoder."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"\x00" + bytes([255, 0, 0, 0, 0, 255])
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def self_test(browser):
    """A good page passes; a page with a truncated data: image and an empty table fails with exactly those."""
    good_src = "data:image/png;base64," + base64.b64encode(tiny_png()).decode()
    table = "<table><tr><th>a</th></tr><tr><td>1</td></tr></table>"
    good = f"<!DOCTYPE html><html><head><title>t</title></head><body>{table}<img alt='ok' src='{good_src}'></body></html>"
    bad = good.replace("</body>", "<img alt='broken' src='data:image/png;base64,AAAA'><table><tr><th>b</th></tr>"
                                  "</table></body>")
    with tempfile.TemporaryDirectory(prefix="qa-report-selftest-") as tmp:
        pages = {}
        for name, text in (("good", good), ("broken", bad)):
            pages[name] = os.path.join(tmp, name + ".html")
            with open(pages[name], "w", encoding="utf-8") as f:
                f.write(text)
        if check(browser, pages["good"], 1):
            sys.exit("check_report_in_browser: self-test: the good page was rejected")
        verdict = browser_verdict(browser, pages["broken"])
        if (verdict["images"], verdict["failed"], verdict["tables"], verdict["empty_tables"]) != (2, 1, 2, 1) or \
                len(problems(verdict, 1)) != 2:
            sys.exit(f"check_report_in_browser: self-test: the broken page was not rejected as it should: {verdict}")
    print("self-test: a good page passes, a broken image and an empty table are caught")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report")
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("--min-images", type=int, default=0)
    args = parser.parse_args()
    browser = find_browser()
    if browser is None:
        print("check_report_in_browser: no browser found (looked for " + ", ".join(BROWSERS)
              + "); scripts/setup.sh installs chromium", file=sys.stderr)
        return 2
    if args.self_test:
        self_test(browser)
    if not os.path.isfile(args.report):
        print(f"check_report_in_browser: {args.report}: no such file", file=sys.stderr)
        return 1
    if check(browser, args.report, args.min_images):
        print(f"check_report_in_browser: {args.report} FAILED in {browser}", file=sys.stderr)
        return 1
    print(f"check_report_in_browser: {args.report} ok in {browser}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
