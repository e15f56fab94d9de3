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

# The Chebyshev series of erfcx on [0, 4] in u = z / 2 - 1, for float evaluation (kErfcxChebyshev; the
# header converts it to powers of u, kErfcxPowers): well conditioned, where the monomials above cancel
# to 1e-2 in float.
CHEBYSHEV_TERMS, NODES = 17, 64
nodes = [mp.cos(mp.pi * (j + mp.mpf(1) / 2) / NODES) for j in range(NODES)]
values = [mp.exp((2 * u + 2) ** 2) * mp.erfc(2 * u + 2) for u in nodes]
series = [2 * mp.fsum(values[j] * mp.cos(mp.pi * k * (j + mp.mpf(1) / 2) / NODES) for j in range(NODES)) / NODES
          for k in range(CHEBYSHEV_TERMS)]
series[0] /= 2
tail = mp.fsum(abs(2 * mp.fsum(values[j] * mp.cos(mp.pi * k * (j + mp.mpf(1) / 2) / NODES) for j in range(NODES))
                   / NODES) for k in range(CHEBYSHEV_TERMS, NODES))
print(f"// {CHEBYSHEV_TERMS} Chebyshev terms, truncation below {mp.nstr(tail, 3)}")
print(",\n".join(mp.nstr(c, 12) + "f" for c in series))
