"""Regenerate the polynomial coefficients of ptxpy/libm.py (a development tool; needs mpmath).

    python benchmarks/libm_coefficients.py            # prints every polynomial as ptxpy source

Each polynomial is the Chebyshev interpolant (near-minimax) of its function, computed with
60-digit mpmath arithmetic, converted to the monomial basis and rounded to the precision it is
evaluated in (f64 or f32). The printed docstring gives the interval, the degree and the largest
error of the rounded polynomial on a dense grid (relative, or absolute where marked), which is
what the error analysis in ptxpy/libm.py's comments assumes. Paste the output over the
functions of the same names in ptxpy/libm.py.
"""
from __future__ import annotations

import sys
import textwrap

import mpmath as mp
import numpy as np

mp.mp.dps = 60


def series(terms, tol=mp.mpf(10) ** -70):
    """Sum of terms(n) for n = 0, 1, ... until they are negligible (they must decrease)."""
    total, n = mp.mpf(0), 0
    while True:
        term = terms(n)
        total += term
        if abs(term) < tol:
            return total
        n += 1


def chebyshev_fit(f, lo, hi, degree):
    """Monomial coefficients c[0..degree] of the interpolant of f at the Chebyshev nodes."""
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    n = degree + 1
    xs = [(lo + hi) / 2 + (hi - lo) / 2 * mp.cos(mp.pi * (2 * k + 1) / (2 * n)) for k in range(n)]
    matrix = mp.matrix([[x ** j for j in range(n)] for x in xs])
    coeffs = mp.lu_solve(matrix, mp.matrix([f(x) for x in xs]))
    return [coeffs[j] for j in range(n)]


def rounded(coeffs, precision):
    if precision == "f32":
        return [float(np.float32(float(c))) for c in coeffs]
    return [float(c) for c in coeffs]


def max_error(f, coeffs, lo, hi, relative, points=1500):
    worst = mp.mpf(0)
    for k in range(points + 1):
        x = mp.mpf(lo) + (mp.mpf(hi) - mp.mpf(lo)) * k / points
        exact = f(x)
        approx = mp.polyval([mp.mpf(c) for c in reversed(coeffs)], x)
        err = abs(approx - exact) / (abs(exact) if relative else 1)
        worst = max(worst, err)
    return worst


# --- the functions -----------------------------------------------------------------------------
LN2_HALF = mp.log(2) / 2
SQRT_HALF_S = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)       # |s| = |(m-1)/(m+1)| for m in [sqrt(1/2), sqrt(2)]
PI_4 = mp.pi / 4
ERF_ONE_MAX = mp.mpf("5.9215871957945073")                # erfc(x) = 2^-54 here: erf rounds to 1 above


def exp_tail(r):          # (e^r - 1 - r - r^2/2) / r^3
    return series(lambda n: r ** n / mp.factorial(n + 3))


def log_tail(z):          # (2 atanh(s) - 2s - 2s^3/3) / s^5 with z = s^2
    return series(lambda n: 2 * z ** n / (2 * n + 5))


def sin_tail(z):          # (sin r - r) / r^3 with z = r^2
    return series(lambda n: (-1) ** (n + 1) * z ** n / mp.factorial(2 * n + 3))


def cos_tail(z):          # (cos r - 1 + r^2/2) / r^4 with z = r^2
    return series(lambda n: (-1) ** n * z ** n / mp.factorial(2 * n + 4))


def erf_small(z):         # erf(x)/x - 1 with z = x^2
    return 2 / mp.sqrt(mp.pi) * series(lambda n: (-1) ** n * z ** n / (mp.factorial(n) * (2 * n + 1))) - 1


def erfcx(a):             # erfc(a) e^(a^2)
    return mp.erfc(a) * mp.exp(a * a)


def exp_quadratic(r):     # (e^r - 1 - r) / r^2
    return series(lambda n: r ** n / mp.factorial(n + 2))


def log_quadratic(z):     # (2 atanh(s) - 2s) / (s z) with z = s^2
    return series(lambda n: 2 * z ** n / (2 * n + 3))


ATAN_T = mp.mpf(7) / 16                                   # |t| after atan's reduction


def atan_tail(z):         # (atan(t) - t) / t^3 with z = t^2
    return series(lambda n: (-1) ** (n + 1) * z ** n / (2 * n + 3))


def asin_tail(z):         # (asin(s) - s) / s^3 with z = s^2 (the closed form loses 15 digits of 60)
    if z < mp.mpf(10) ** -15:
        return mp.mpf(1) / 6 + 3 * z / 40
    s = mp.sqrt(z)
    return (mp.asin(s) - s) / (z * s)


#: name, function, interval, degree, variable shift, precision, relative error?, docstring
POLYNOMIALS = [
    ("_exp_tail_f64", exp_tail, (-LN2_HALF * (1 + 1e-9), LN2_HALF * (1 + 1e-9)), 10, 0, "f64", True,
     "(e^r - 1 - r - r^2/2) / r^3 for |r| <= ln(2)/2"),
    ("_log_tail_f64", log_tail, (0, SQRT_HALF_S ** 2 * (1 + 1e-9)), 7, 0, "f64", True,
     "(2 atanh(s) - 2s - 2s^3/3) / s^5 with z = s^2, |s| <= (sqrt(2)-1)/(sqrt(2)+1)"),
    ("_sin_tail_f64", sin_tail, (0, (PI_4 * (1 + 1e-6)) ** 2), 6, 0, "f64", True,
     "(sin(r) - r) / r^3 with z = r^2, |r| <= pi/4"),
    ("_cos_tail_f64", cos_tail, (0, (PI_4 * (1 + 1e-6)) ** 2), 6, 0, "f64", True,
     "(cos(r) - 1 + r^2/2) / r^4 with z = r^2, |r| <= pi/4"),
    ("_erf_small_f64", erf_small, (0, 1), 12, 0, "f64", False,
     "erf(x)/x - 1 with z = x^2, |x| <= 1 (absolute error)"),
    ("_erfcx_near_f64", erfcx, (1, 2), 16, mp.mpf(1.5), "f64", True,
     "erfc(a) e^(a^2) for 1 <= a <= 2, in w = a - 1.5"),
    ("_erfcx_far_f64", lambda t: erfcx(1 / t), (1 / ERF_ONE_MAX, mp.mpf(0.5)), 15, mp.mpf(0.33), "f64",
     True, "erfc(a) e^(a^2) for 2 <= a <= 5.93, in w = 1/a - 0.33"),
    ("_exp_quadratic_f32", exp_quadratic, (-LN2_HALF * 1.0001, LN2_HALF * 1.0001), 5, 0, "f32", True,
     "(e^r - 1 - r) / r^2 for |r| <= ln(2)/2"),
    ("_exp_tail_f32", exp_tail, (-LN2_HALF * 1.0001, LN2_HALF * 1.0001), 4, 0, "f32", True,
     "(e^r - 1 - r - r^2/2) / r^3 for |r| <= ln(2)/2"),
    ("_log_quadratic_f32", log_quadratic, (0, SQRT_HALF_S ** 2 * (1 + 1e-6)), 3, 0, "f32", True,
     "(2 atanh(s) - 2s) / s^3 with z = s^2, |s| <= (sqrt(2)-1)/(sqrt(2)+1)"),
    ("_sin_tail_f32", sin_tail, (0, (PI_4 * (1 + 1e-6)) ** 2), 3, 0, "f32", True,
     "(sin(r) - r) / r^3 with z = r^2, |r| <= pi/4"),
    ("_cos_tail_f32", cos_tail, (0, (PI_4 * (1 + 1e-6)) ** 2), 3, 0, "f32", True,
     "(cos(r) - 1 + r^2/2) / r^4 with z = r^2, |r| <= pi/4"),
    ("_erf_small_f32", erf_small, (0, 1), 7, 0, "f32", False,
     "erf(x)/x - 1 with z = x^2, |x| <= 1"),
    ("_erfcx_near_f32", erfcx, (1, 2), 9, mp.mpf(1.5), "f32", True,
     "erfc(a) e^(a^2) for 1 <= a <= 2, in w = a - 1.5"),
    ("_erfcx_far_f32", lambda t: erfcx(1 / t), (1 / mp.mpf(3.93), mp.mpf(0.5)), 7, mp.mpf(0.38), "f32",
     True, "erfc(a) e^(a^2) for 2 <= a <= 3.93, in w = 1/a - 0.38"),
    ("_atan_tail_f64", atan_tail, (0, ATAN_T ** 2 * (1 + 1e-6)), 11, 0, "f64", True,
     "(atan(t) - t) / t^3 with z = t^2, |t| <= 7/16"),
    ("_asin_tail_f64", asin_tail, (0, mp.mpf(0.25) * (1 + 1e-9)), 12, 0, "f64", True,
     "(asin(s) - s) / s^3 with z = s^2, |s| <= 1/2"),
    ("_atan_tail_f32", atan_tail, (0, ATAN_T ** 2 * (1 + 1e-6)), 5, 0, "f32", True,
     "(atan(t) - t) / t^3 with z = t^2, |t| <= 7/16"),
    ("_asin_tail_f32", asin_tail, (0, mp.mpf(0.25) * (1 + 1e-6)), 5, 0, "f32", True,
     "(asin(s) - s) / s^3 with z = s^2, |s| <= 1/2"),
    ("_cbrt_f64", mp.cbrt, (1, 2), 6, mp.mpf(1.5), "f64", True, "cbrt(m) for 1 <= m <= 2, in w = m - 1.5"),
    ("_cbrt_f32", mp.cbrt, (1, 2), 2, mp.mpf(1.5), "f32", True, "cbrt(m) for 1 <= m <= 2, in w = m - 1.5"),
]


def emit(name, f, interval, degree, shift, precision, relative, doc) -> str:
    lo, hi = (mp.mpf(v) for v in interval)
    shifted = (lambda w: f(w + shift)) if shift else f
    coeffs = rounded(chebyshev_fit(shifted, lo - shift, hi - shift, degree), precision)
    err = max_error(shifted, coeffs, lo - shift, hi - shift, relative)
    var = "w" if shift else ("r" if "exp" in name else "z")
    kind = "relative" if relative else "absolute"
    docstring = f'"""{doc}: degree {degree}, {kind} error 2^{float(mp.log(err, 2)):.1f}."""'
    lines = ["@ptxpy.func", f"def {name}({var}: {precision}) -> {precision}:"]
    lines += textwrap.wrap(docstring, 100, initial_indent="    ", subsequent_indent="    ")
    lines.append(f"    p = {precision}({_literal(coeffs[-1], precision)})")
    lines += [f"    p = ptxpy.fma(p, {var}, {_literal(c, precision)})" for c in reversed(coeffs[:-1])]
    lines.append("    return p")
    return "\n".join(lines)


def _literal(value: float, precision: str) -> str:
    """The shortest decimal that reads back as this f32 (or f64) value."""
    return repr(value) if precision == "f64" else _shortest_f32(value)


def _shortest_f32(value: float) -> str:
    text = str(np.float32(value))               # NumPy prints the shortest round-trip form
    assert np.float32(float(text)) == np.float32(value)
    return text


# --- polynomials whose two leading coefficients are double-word pairs (erfc) ------------------
def erfc_scaled(t):       # a erfc(a) e^(a^2) with t = 1/a
    return mp.erfc(1 / t) * mp.exp(1 / t ** 2) / t


ERFC_NEAR = mp.mpf(15) / 32     # below, erfc = 1 - erf (erfc > 1/2 there)
ERFC_ZERO_F64 = mp.mpf(27.3)    # erfc rounds to 0 above (f64)
ERFC_ZERO_F32 = mp.mpf(10.1)    # and in f32

#: name, function, interval, degree, variable shift, precision, docstring: the function as
#: (C0 + C0_lo) + w ((C1 + C1_lo) + w Q(w)), the last two steps in double-word arithmetic (the
#: shift must be exact in the precision: w is computed as 1/a - shift)
DD_POLYNOMIALS = [
    ("_erfc_near_f64", erfc_scaled, (mp.mpf(0.5), 1 / ERFC_NEAR), 30, mp.mpf(1.25), "f64",
     "a erfc(a) e^(a^2) for 15/32 <= a <= 2, in w + w_lo = 1/a - 1.25"),
    ("_erfc_far_f64", erfc_scaled, (1 / ERFC_ZERO_F64, mp.mpf(0.5)), 23, mp.mpf(0.27), "f64",
     "a erfc(a) e^(a^2) for 2 <= a <= 27.3, in w + w_lo = 1/a - 0.27"),
    ("_erfc_near_f32", erfc_scaled, (mp.mpf(0.5), 1 / ERFC_NEAR), 15, mp.mpf(1.25), "f32",
     "a erfc(a) e^(a^2) for 15/32 <= a <= 2, in w + w_lo = 1/a - 1.25"),
    ("_erfc_far_f32", erfc_scaled, (1 / ERFC_ZERO_F32, mp.mpf(0.5)), 9, mp.mpf(0.296875), "f32",
     "a erfc(a) e^(a^2) for 2 <= a <= 10.1, in w + w_lo = 1/a - 0.296875"),
]


def emit_dd(name, f, interval, degree, shift, precision, doc) -> str:
    lo, hi = (mp.mpf(v) - shift for v in interval)
    c0, c1, c2 = mp.taylor(lambda w: f(w + shift), 0, 2)
    quotient = lambda w: (f(w + shift) - c0 - c1 * w) / w ** 2 if abs(w) > 1e-12 else c2  # noqa: E731
    coeffs = rounded(chebyshev_fit(quotient, lo, hi, degree - 2), precision)
    pairs = []
    for c in (c1, c0):
        c_hi = rounded([c], precision)[0]
        pairs.append((c_hi, rounded([c - c_hi], precision)[0]))
    (c1_hi, c1_lo), (c0_hi, c0_lo) = pairs
    err = mp.mpf(0)
    for k in range(1501):
        w = lo + (hi - lo) * k / 1500
        q = mp.polyval([mp.mpf(c) for c in reversed(coeffs)], w)
        value = (mp.mpf(c0_hi) + c0_lo) + w * ((mp.mpf(c1_hi) + c1_lo) + w * q)
        exact = f(w + shift)
        err = max(err, abs(value - exact) / abs(exact))
    docstring = (f'"""{doc}, as hi + lo: degree {degree}, relative error 2^{float(mp.log(err, 2)):.1f}; '
                 f'the two leading coefficients are pairs."""')
    lit = lambda v: _literal(v, precision)  # noqa: E731
    lines = ["@ptxpy.func", f"def {name}(w: {precision}, w_lo: {precision}) -> tuple[{precision}, {precision}]:"]
    lines += textwrap.wrap(docstring, 100, initial_indent="    ", subsequent_indent="    ")
    lines.append(f"    p = {precision}({lit(coeffs[-1])})")
    lines += [f"    p = ptxpy.fma(p, w, {lit(c)})" for c in reversed(coeffs[:-1])]
    lines.append(f"    hi, lo = _dd_step_{precision}(p, w, w_lo, {lit(c1_hi)}, {lit(c1_lo)})")
    lines.append(f"    return _dd_step_{precision}(hi, w, w_lo, {lit(c0_hi)}, ptxpy.fma(w, lo, {lit(c0_lo)}))")
    return "\n".join(lines)


def main(names=()):
    for poly in POLYNOMIALS:
        if not names or poly[0] in names:
            print(emit(*poly))
            print("\n")
    for poly in DD_POLYNOMIALS:
        if not names or poly[0] in names:
            print(emit_dd(*poly))
            print("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
