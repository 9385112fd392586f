#!/usr/bin/env python3
"""Largest distance between the points two ITK affine text files map the corners of a brain-sized box to (LPS mm).

usage: compare_itk_affines.py A.txt B.txt TOLERANCE_MM   (exit 0 when within the tolerance)
"""
import itertools
import sys


def load(path):
    params = centre = None
    for line in open(path):
        if line.startswith("Parameters:"):
            params = [float(v) for v in line.split()[1:]]
        if line.startswith("FixedParameters:"):
            centre = [float(v) for v in line.split()[1:]]
    m = [params[0:3], params[3:6], params[6:9]]
    return lambda x: [sum(m[r][k] * (x[k] - centre[k]) for k in range(3)) + centre[r] + params[9 + r] for r in range(3)]


a, b = load(sys.argv[1]), load(sys.argv[2])
worst = max(sum((u - v) ** 2 for u, v in zip(a(x), b(x))) ** 0.5
            for x in itertools.product((-60, 60), (-80, 40), (-40, 70)))
print(f"largest corner distance {worst:.3f} mm")
sys.exit(0 if worst < float(sys.argv[3]) else 1)
