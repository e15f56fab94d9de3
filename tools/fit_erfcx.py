#!/usr/bin/env python3
"""Prints the coefficients of src/ops/vector_math.h's kErfcxOverT (11 terms, f32 results) and
kHalfErfcxOverT (7 terms, results that round to bf16) and kHalfErfcxOverTForF16 (9 terms, f16): erfcx(a) / t, erfcx(a) = exp(a^2) erfc(a),
as a polynomial in t = 1 / (1 + a / 2) (mpmath's Chebyshev fit at 40 digits, converted to monomials,
lowest degree first); the last two are halved (the GELU's erfc / 2), and kHalfErfcxOverT's constant term is
then set so that its float Horner sum at t = 1 is 1/2 exactly (h = 1/2 at x = 0). Needs Debian's python3-mpmath."""
import struct

import mpmath as mp

mp.mp.dps = 40


# erfcx(a) = t Q(t), t = 1 / (1 + a / 2), for float evaluation: Q is smooth on t in [1/7, 1] (a in [0, 12];
# past 12, exp(-a^2) is below float's range), between 0.28 and 1, and its powers of t stay well
# conditioned in float.
def erfcx_over_t(t):
    a = 2 * (1 / t - 1)
    return mp.exp(a * a) * mp.erfc(a) / t


# (name, terms, lowest t, scale): bf16's erf-GELU underflows below x = -13.3 (a = 9.4, t = 0.175), so its
# fit stops at t = 0.17.
def to_float(x):
    return struct.unpack("f", struct.pack("f", float(x)))[0]


fits = (("kErfcxOverT", 11, mp.mpf(1) / 7, 1), ("kHalfErfcxOverT", 7, mp.mpf("0.17"), 0.5),
        ("kHalfErfcxOverTForF16", 9, mp.mpf("0.17"), 0.5))
for name, terms, low, scale in fits:
    coefficients, error = mp.chebyfit(lambda t: scale * erfcx_over_t(t), [low, 1], terms, error=True)
    printed = [mp.nstr(c, 12) for c in reversed(coefficients)]  # lowest degree first
    if name == "kHalfErfcxOverT":  # the float Horner sum at t = 1 (each step one rounding, as an fma's) is 1/2 exactly
        rest = to_float(printed[-1])
        for c in reversed(printed[1:-1]):
            rest = to_float(rest + to_float(c))
        constant = to_float(0.5 - rest)  # exact: a multiple of rest's ulp, under 1/4
        assert to_float(rest + constant) == 0.5
        printed[0] = "%.12g" % constant
    print(f"// {name}: {terms} terms, max |fit - Q| on [{mp.nstr(low, 3)}, 1] = {mp.nstr(error, 3)}")
    print(",\n".join(c + "f" for c in printed))
