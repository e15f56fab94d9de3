#!/usr/bin/env python3
"""Prints the coefficients of src/ops/vector_math.h's kErfcxOverT (11 terms, f32 results) and
kErfcxOverTForBf16 (9 terms): erfcx(a) / t, erfcx(a) = exp(a^2) erfc(a), as a polynomial in
t = 1 / (1 + a / 2) (mpmath's Chebyshev fit at 40 digits, converted to monomials, lowest degree first).
Needs Debian's python3-mpmath."""
import mpmath as mp

mp.mp.dps = 40


# erfcx(a) = t Q(t), t = 1 / (1 + a / 2), for float evaluation: Q is smooth on t in [1/7, 1] (a in [0, 12];
# past 12, exp(-a^2) is below float's range), between 0.28 and 1, and its powers of t stay well
# conditioned in float.
def erfcx_over_t(t):
    a = 2 * (1 / t - 1)
    return mp.exp(a * a) * mp.erfc(a) / t


for terms in (11, 9):
    coefficients, error = mp.chebyfit(erfcx_over_t, [mp.mpf(1) / 7, 1], terms, error=True)
    print(f"// {terms} terms, max |fit - Q| on [1/7, 1] = {mp.nstr(error, 3)}")
    print(",\n".join(mp.nstr(c, 12) + "f" for c in reversed(coefficients)))
