#!/usr/bin/env python3
"""Prints the coefficients of src/ops/vector_math.h's kErfcxFit: a polynomial in z that approximates the
scaled complementary error function erfcx(z) = exp(z^2) erfc(z) on [0, 4] (mpmath's Chebyshev fit at
40 digits, converted to monomials, lowest degree first). Needs Debian's python3-mpmath."""
import mpmath as mp

mp.mp.dps = 40
TERMS = 22
coefficients, error = mp.chebyfit(lambda z: mp.exp(z * z) * mp.erfc(z), [0, 4], TERMS, error=True)
print(f"// {TERMS} terms, max |fit - erfcx| on [0, 4] = {mp.nstr(error, 3)}")
print(",\n".join(mp.nstr(c, 20) for c in reversed(coefficients)))
