#!/usr/bin/env python3
"""Exit 0 when two JSON reports are equal apart from where and how fast they ran: keys containing "seconds", "device"
or "ranks" are dropped at every level, and any KEY given. Used by the scale-out checks (tests/cli/scale_*_checks.sh)
to compare the reports of one device, several devices and several MPI ranks.

  same_json.py A B [KEY ...]
"""
import json
import sys


def strip(x, extra):
    if isinstance(x, dict):
        return {
            k: strip(v, extra)
            for k, v in x.items()
            if not any(w in k for w in ("seconds", "device", "ranks")) and k not in extra
        }
    if isinstance(x, list):
        return [strip(v, extra) for v in x]
    return x


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    extra = set(sys.argv[3:])
    a, b = (strip(json.load(open(p)), extra) for p in sys.argv[1:3])
    if a != b:
        print(f"{sys.argv[1]} and {sys.argv[2]} differ", file=sys.stderr)
    sys.exit(0 if a == b else 1)


if __name__ == "__main__":
    main()
