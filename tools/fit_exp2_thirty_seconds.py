#!/usr/bin/env python3
"""Prints the coefficients of src/ops/vector_math.h's exp2_nonpositive_by_thirty_seconds: 2^f = 1 + s(f),
s(f) = c0 + c1 f + c2 f^2, the minimax of the relative error on f in [0, 1/32] (Remez's exchange over four
points at 40 digits), and that error, then each coefficient as the float the kernel holds (lowest degree
first). Needs Debian's python3-mpmath."""
import struct

import mpmath as mp

mp.mp.dps = 40
END = mp.mpf(1) / 32


def relative_error(c, f):
    return (1 + c[0] + c[1] * f + c[2] * f * f) / mp.power(2, f) - 1


points = [END * (1 - mp.cos(mp.pi * k / 3)) / 2 for k in range(4)]
for _ in range(20):
    # 1 + s(f_k) - 2^(f_k) = (-1)^k E 2^(f_k) at the four points: c0, c1, c2 and E.
    a, b = mp.matrix(4, 4), mp.matrix(4, 1)
    for k, f in enumerate(points):
        a[k, 0], a[k, 1], a[k, 2], a[k, 3] = 1, f, f * f, -((-1) ** k) * mp.power(2, f)
        b[k] = mp.power(2, f) - 1
    solution = mp.lu_solve(a, b)
    c = [solution[0], solution[1], solution[2]]
    # The new points: the ends and the two interior extrema of the error.
    interior = [mp.findroot(lambda f: mp.diff(lambda g: relative_error(c, g), f), p) for p in points[1:3]]
    points = [mp.mpf(0), interior[0], interior[1], END]

print(f"// max relative error on [0, 1/32]: {mp.nstr(abs(solution[3]), 4)} = 2^{mp.nstr(mp.log(abs(solution[3]), 2), 4)}")
for v in c:
    print(float.hex(struct.unpack("f", struct.pack("f", float(v)))[0]), mp.nstr(v, 12))
