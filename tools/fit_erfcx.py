#!/usr/bin/env python3
"""Prints the coefficients of src/ops/vector_math.h's kErfcxFit: a polynomial in z that approximates the
scaled complementary error function erfcx(z) = exp(z^2) erfc(z) on [0, 4] (mpmath's Chebyshev fit at
40 digits, converted to monomials, lowest degree first); and of kErfcxOverT, erfcx(a) / t as a
polynomial in t = 1 / (1 + a / 2). Needs Debian's python3-mpmath."""
import mpmath as mp

mp.mp.dps = 40
TERMS = 22
coefficients, error = mp.chebyfit(lambda z: mp.exp(z * z) * mp.erfc(z), [0, 4], TERMS, error=True)
print(f"// {TERMS} terms, max |fit - erfcx| on [0, 4] = {mp.nstr(error, 3)}")
print(",\n".join(mp.nstr(c, 20) for c in reversed(coefficients)))

# erfcx(a) = t Q(t), t = 1 / (1 + a / 2), for float evaluation (kErfcxOverT): Q is smooth on t in [1/7, 1]
# (a in [0, 12]; past 12, exp(-a^2) is below float's range), between 0.28 and 1, and its powers of t
# stay well conditioned in float.
TERMS_IN_T = 9


def erfcx_over_t(t):
    a = 2 * (1 / t - 1)
    return mp.exp(a * a) * mp.erfc(a) / t


coefficients, error = mp.chebyfit(erfcx_over_t, [mp.mpf(1) / 7, 1], TERMS_IN_T, error=True)
print(f"// {TERMS_IN_T} terms, max |fit - Q| on [1/7, 1] = {mp.nstr(error, 3)}")
print(",\n".join(mp.nstr(c, 12) + "f" for c in reversed(coefficients)))
