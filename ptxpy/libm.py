"""ptxpy's accurate math library, written in the ptxpy kernel language.

The compiler reads this file with its own frontend (transpiler/mathlib.py) and inlines
`NAME_f32` or `NAME_f64` wherever a kernel calls `math.NAME` on that type: exp exp2 log log2
log10 sin cos tan tanh erf pow fmod, then (in sections at the end) atan asin acos atan2, sinh
cosh asinh acosh atanh expm1 log1p, hypot cbrt erfc, ldexp frexp; and `floordiv_*`/`floormod_*` for the
float operators `//` and `%`. It is never imported to compute anything. Everything here is
built from correctly rounded IEEE operations (add, sub, mul, div and fma in round-to-nearest,
integer arithmetic, conversions, `ptxpy.bitcast`), so the GPU and ptxpy's simulator compute the
same bits. Two private helpers exist only for this file: `ptxpy._rint` (round to the nearest
integer, ties to even: `cvt.rni`) and `ptxpy._mul_hi` (the high 64 bits of a u64 product).

Error bounds, measured maxima and the method are in docs/math.md; how to add a function is in
docs/design.md. The ideas are the classic ones (FreeBSD msun, musl, CORE-MATH, Sleef):

* double-double arithmetic: a value carried as an unevaluated sum hi + lo of two doubles,
  with the exact error terms of a sum (`_two_sum`) and of a product (`fma(a, b, -a*b)`);
* argument reduction to a small interval (Cody-Waite: subtract k * C with C split so that
  k * C_hi is exact; Payne-Hanek for huge arguments of sin/cos/tan);
* a polynomial on the small interval, evaluated by Horner's rule with fused multiply-adds. The
  coefficients come from benchmarks/libm_coefficients.py (near-minimax Chebyshev fits computed
  with mpmath), which prints the polynomial functions below (`_exp_tail_f64`, ...).

The f64 functions come first, then the f32 ones, which use the same algorithms in f32
arithmetic with double-f32 pairs (only pow and the reduction of huge trigonometric arguments
go through f64). Each function handles its special values (NaN, infinities, zeros, tiny and
huge arguments) before the general path; a NaN argument is returned unchanged.
"""
import math

import ptxpy
from ptxpy import f32, f64, i32, i64, u32, u64

# --- constants (all exactly representable as written; `*_HI42` have 42 significant bits, so
# k * C_HI42 is exact for |k| < 2^11) ------------------------------------------------------------
LN2 = 0.6931471805599453                  # ln 2 rounded to double
LN2_LO = 2.3190468138462996e-17           # ln 2 - LN2
LN2_HI42 = 0.6931471805598903
LN2_LO42 = 5.497923018708371e-14          # ln 2 - LN2_HI42
INV_LN2 = 1.4426950408889634
LOG2E_HI = 1.4426950408889634             # log2(e) = LOG2E_HI + LOG2E_LO
LOG2E_LO = 2.0355273740931033e-17
LOG10E_HI = 0.4342944819032518            # log10(e)
LOG10E_LO = 1.098319650216765e-17
LOG10_2_HI42 = 0.30102999566395283        # log10(2) = LOG10_2_HI42 + LOG10_2_LO42
LOG10_2_LO42 = 2.8363394551044964e-14
TWO_THIRDS_HI = 0.6666666666666666
TWO_THIRDS_LO = 3.700743415417188e-17
SQRT2 = 1.4142135623730951
SMALLEST_NORMAL = 2.2250738585072014e-308
TWO_54 = 18014398509481984.0
PI_4 = 0.7853981633974483
TWO_OVER_PI = 0.6366197723675814
PIO2_HI = 1.5707963267948966              # pi/2 = PIO2_HI + PIO2_LO
PIO2_LO = 6.123233995736766e-17
PIO2_1 = 1.5707963267341256               # pi/2 = PIO2_1 + PIO2_2 + PIO2_3 + PIO2_4, the first
PIO2_2 = 6.077100506303966e-11            # three with 33 significant bits: k * PIO2_i is exact
PIO2_3 = 2.0222662487111665e-21           # for |k| <= 2^20
PIO2_4 = 8.4784276603689e-32
MEDIUM_LIMIT = 1647099.0                  # just below 2^20 pi/2: Cody-Waite below, Payne-Hanek above
EFX = 0.1283791670955126                  # 2/sqrt(pi) - 1
ERF_IS_ONE = 5.9215871957945073           # erfc(x) < 2^-54 above: erf(x) rounds to 1
TANH_IS_ONE = 19.1                        # 1 - tanh(x) < 2^-54 above: tanh(x) rounds to 1


# --- double-double arithmetic ------------------------------------------------------------------
@ptxpy.func
def _two_sum(a: f64, b: f64) -> tuple[f64, f64]:
    """s = fl(a + b) and the rounding error e: s + e == a + b exactly (Knuth)."""
    s = a + b
    b_part = s - a
    e = (a - (s - b_part)) + (b - b_part)
    return s, e


@ptxpy.func
def _fast_two_sum(a: f64, b: f64) -> tuple[f64, f64]:
    """As `_two_sum` when |a| >= |b| or a == 0 (Dekker): three operations instead of six."""
    s = a + b
    return s, b - (s - a)


@ptxpy.func
def _dd_div(num: f64, num_lo: f64, den: f64, den_lo: f64) -> tuple[f64, f64]:
    """(num + num_lo) / (den + den_lo) as hi + lo, relative error about 2^-100."""
    q = num / den
    remainder = ptxpy.fma(-q, den, num) + (num_lo - q * den_lo)    # the first product is exact
    return _fast_two_sum(q, remainder / den)


@ptxpy.func
def _pow2_f64(k: i32) -> f64:
    """2^k for -1022 <= k <= 1023, built from its bits."""
    return ptxpy.bitcast(u64(k + 1023) << 52, f64)


@ptxpy.func
def _scale_f64(y: f64, k: i32) -> f64:
    """y * 2^k for y in [1/2, 2] and |k| <= 2100, rounded once: y * 2^(k/2) is exact, and the
    second factor overflows to inf or rounds into the subnormals as the result must."""
    half = k >> 1
    return (y * _pow2_f64(half)) * _pow2_f64(k - half)


# --- polynomials (printed by benchmarks/libm_coefficients.py) ----------------------------------
@ptxpy.func
def _exp_tail_f64(r: f64) -> f64:
    """(e^r - 1 - r - r^2/2) / r^3 for |r| <= ln(2)/2: degree 10, relative error 2^-53.8."""
    p = f64(1.608432282404404e-10)
    p = ptxpy.fma(p, r, 2.0914679376659845e-09)
    p = ptxpy.fma(p, r, 2.5052078014485746e-08)
    p = ptxpy.fma(p, r, 2.755727366134845e-07)
    p = ptxpy.fma(p, r, 2.7557319239947517e-06)
    p = ptxpy.fma(p, r, 2.4801587325533363e-05)
    p = ptxpy.fma(p, r, 0.00019841269841266418)
    p = ptxpy.fma(p, r, 0.0013888888888883752)
    p = ptxpy.fma(p, r, 0.008333333333333333)
    p = ptxpy.fma(p, r, 0.04166666666666667)
    p = ptxpy.fma(p, r, 0.16666666666666666)
    return p


@ptxpy.func
def _log_tail_f64(z: f64) -> f64:
    """(2 atanh(s) - 2s - 2s^3/3) / s^5 with z = s^2, |s| <= (sqrt(2)-1)/(sqrt(2)+1): degree 7,
    relative error 2^-53.8."""
    p = f64(0.11723051029373703)
    p = ptxpy.fma(p, z, 0.11706248540800378)
    p = ptxpy.fma(p, z, 0.133348042382299)
    p = ptxpy.fma(p, z, 0.15384594970895374)
    p = ptxpy.fma(p, z, 0.18181818335314404)
    p = ptxpy.fma(p, z, 0.22222222221656232)
    p = ptxpy.fma(p, z, 0.28571428571429364)
    p = ptxpy.fma(p, z, 0.4)
    return p


@ptxpy.func
def _sin_tail_f64(z: f64) -> f64:
    """(sin(r) - r) / r^3 with z = r^2, |r| <= pi/4: degree 6, relative error 2^-54.0."""
    p = f64(-7.586696997236634e-13)
    p = ptxpy.fma(p, z, 1.6058531616942478e-10)
    p = ptxpy.fma(p, z, -2.5052106232434684e-08)
    p = ptxpy.fma(p, z, 2.755731921933913e-06)
    p = ptxpy.fma(p, z, -0.00019841269841265065)
    p = ptxpy.fma(p, z, 0.008333333333333331)
    p = ptxpy.fma(p, z, -0.16666666666666666)
    return p


@ptxpy.func
def _cos_tail_f64(z: f64) -> f64:
    """(cos(r) - 1 + r^2/2) / r^4 with z = r^2, |r| <= pi/4: degree 6, relative error 2^-54.0."""
    p = f64(4.745871835064003e-14)
    p = ptxpy.fma(p, z, -1.1470460886473721e-11)
    p = ptxpy.fma(p, z, 2.0876755791073254e-09)
    p = ptxpy.fma(p, z, -2.7557319221402803e-07)
    p = ptxpy.fma(p, z, 2.4801587301584645e-05)
    p = ptxpy.fma(p, z, -0.0013888888888888887)
    p = ptxpy.fma(p, z, 0.041666666666666664)
    return p


@ptxpy.func
def _erf_small_f64(z: f64) -> f64:
    """erf(x)/x - 1 with z = x^2, |x| <= 1: degree 12, absolute error 2^-55.8."""
    p = f64(5.957176147748911e-11)
    p = ptxpy.fma(p, z, -1.1372848856791674e-09)
    p = ptxpy.fma(p, z, 1.4659775274047436e-08)
    p = ptxpy.fma(p, z, -1.6350312701054695e-07)
    p = ptxpy.fma(p, z, 1.6461000484121368e-06)
    p = ptxpy.fma(p, z, -1.4925595266831182e-05)
    p = ptxpy.fma(p, z, 0.0001205533111164271)
    p = ptxpy.fma(p, z, -0.000854832698083379)
    p = ptxpy.fma(p, z, 0.0052239776248180145)
    p = ptxpy.fma(p, z, -0.026866170645076792)
    p = ptxpy.fma(p, z, 0.11283791670954879)
    p = ptxpy.fma(p, z, -0.3761263890318375)
    p = ptxpy.fma(p, z, 0.1283791670955126)
    return p


@ptxpy.func
def _erfcx_near_f64(w: f64) -> f64:
    """erfc(a) e^(a^2) for 1 <= a <= 2, in w = a - 1.5: degree 16, relative error 2^-54.0."""
    p = f64(1.3242541506849586e-08)
    p = ptxpy.fma(p, w, -4.9545807838901603e-08)
    p = ptxpy.fma(p, w, 1.6714292901928126e-07)
    p = ptxpy.fma(p, w, -5.944961119917664e-07)
    p = ptxpy.fma(p, w, 2.0670657912156654e-06)
    p = ptxpy.fma(p, w, -6.97536222785843e-06)
    p = ptxpy.fma(p, w, 2.2864299608127746e-05)
    p = ptxpy.fma(p, w, -7.265887301589559e-05)
    p = ptxpy.fma(p, w, 0.0002233099453004411)
    p = ptxpy.fma(p, w, -0.0006619300701084315)
    p = ptxpy.fma(p, w, 0.0018861348769919975)
    p = ptxpy.fma(p, w, -0.0051459575478377826)
    p = ptxpy.fma(p, w, 0.013377340953067394)
    p = ptxpy.fma(p, w, -0.03293090529956527)
    p = ptxpy.fma(p, w, 0.0761510398554774)
    p = ptxpy.fma(p, w, -0.16362291773256005)
    p = ptxpy.fma(p, w, 0.3215854164543175)
    return p


@ptxpy.func
def _erfcx_far_f64(w: f64) -> f64:
    """erfc(a) e^(a^2) for 2 <= a <= 5.93, in w = 1/a - 0.33: degree 15, relative error 2^-50.7."""
    p = f64(3.4963403336917427)
    p = ptxpy.fma(p, w, -1.4935119061374744)
    p = ptxpy.fma(p, w, -0.5943648765970673)
    p = ptxpy.fma(p, w, 1.0253897096386408)
    p = ptxpy.fma(p, w, -0.691664308928342)
    p = ptxpy.fma(p, w, 0.18788881354715634)
    p = ptxpy.fma(p, w, 0.17407359841220404)
    p = ptxpy.fma(p, w, -0.28378229339367883)
    p = ptxpy.fma(p, w, 0.1885734588140313)
    p = ptxpy.fma(p, w, -0.00897003743251567)
    p = ptxpy.fma(p, w, -0.13470530044129467)
    p = ptxpy.fma(p, w, 0.1637191975135197)
    p = ptxpy.fma(p, w, -0.05231406026522958)
    p = ptxpy.fma(p, w, -0.18090468034898524)
    p = ptxpy.fma(p, w, 0.49055809089736757)
    p = ptxpy.fma(p, w, 0.17736796951447031)
    return p


# --- exponentials ------------------------------------------------------------------------------
@ptxpy.func
def _expm1_reduced_f64(r: f64, r_lo: f64) -> tuple[f64, f64]:
    """e^(r + r_lo) - 1 as hi + lo, for |r| <= ln(2)/2 and |r_lo| <= ulp(r).

    r + r^2/2 is kept exactly (r^2 by fma); only the cubic and higher terms, at most 0.008, go
    through the polynomial, so the error stays near 2^-58. r_lo enters to first order,
    r_lo e^r ~ r_lo (1 + r + r^2/2), off by r_lo r^3/6 < 2^-60."""
    sq = r * r
    sq_lo = ptxpy.fma(r, r, -sq)
    half = 0.5 * sq
    hi, err = _fast_two_sum(r, half)
    tail = r * sq * _exp_tail_f64(r)
    lo = err + (0.5 * sq_lo + tail + r_lo * (1.0 + r + half))
    return _fast_two_sum(hi, lo)


@ptxpy.func
def _exp_reduce_f64(x: f64, x_lo: f64) -> tuple[i32, f64, f64]:
    """k and hi + lo with e^(x + x_lo) = 2^k (1 + hi + lo), for |x| <= 1100 and |x_lo| <= 2^-40.

    k = rint(x / ln 2) and r = x - k ln 2: fma gives x - k * LN2 exactly (it is a multiple of
    ulp(x) or 2^-53 below 1/2); k * LN2_LO, the rest of ln 2 (up to 2^-45), joins x_lo, and
    the two are renormalized so that the low part is below ulp(r), as the kernel needs."""
    k = ptxpy._rint(x * INV_LN2)
    r, r_lo = _two_sum(ptxpy.fma(-k, LN2, x), ptxpy.fma(-k, LN2_LO, x_lo))
    hi, lo = _expm1_reduced_f64(r, r_lo)
    return i32(k), hi, lo


@ptxpy.func
def _exp_finish_f64(k: i32, hi: f64, lo: f64) -> f64:
    """2^k (1 + hi + lo): the sum rounded once, then scaled (a second rounding only when the
    result is subnormal)."""
    one, err = _fast_two_sum(1.0, hi)
    return _scale_f64(one + (err + lo), k)


@ptxpy.func
def exp_f64(x: f64) -> f64:
    """e^x. Arguments beyond [-746, 710] saturate to 0 and inf through the scaling."""
    if x != x:
        return x
    k, hi, lo = _exp_reduce_f64(min(max(x, -746.0), 710.0), 0.0)
    return _exp_finish_f64(k, hi, lo)


@ptxpy.func
def exp2_f64(x: f64) -> f64:
    """2^x = 2^k e^(f ln 2) with k = rint(x), f = x - k exact; f ln 2 as a double-double."""
    if x != x:
        return x
    t = min(max(x, -1080.0), 1030.0)
    k = ptxpy._rint(t)
    f = t - k
    r = f * LN2
    r_lo = ptxpy.fma(f, LN2, -r) + f * LN2_LO
    hi, lo = _expm1_reduced_f64(r, r_lo)
    return _exp_finish_f64(i32(k), hi, lo)


# --- logarithms --------------------------------------------------------------------------------
@ptxpy.func
def _log_reduced_f64(x: f64) -> tuple[i32, f64, f64]:
    """k and hi + lo with ln(x) = k ln 2 + hi + lo, for positive finite x.

    x = 2^k m with m in [sqrt(1/2), sqrt(2)], f = m - 1 exactly, and
    ln(m) = 2 atanh(s) = 2s + (2/3) s^3 + s^5 R(s^2) with s = f / (2 + f), |s| <= 0.1716.
    s is carried as a double-double (the division's remainder is exact by fma), and so are the
    first two terms; only s^5 R, below 2^-12.5 of the result, is a plain double. The relative
    error of hi + lo is about 2^-64, which pow needs."""
    k = 0
    scaled = x
    if x < SMALLEST_NORMAL:
        scaled = x * TWO_54
        k = -54
    bits = ptxpy.bitcast(scaled, u64)
    k = k + i32(bits >> 52) - 1023
    m = ptxpy.bitcast((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000, f64)    # in [1, 2)
    if m > SQRT2:
        m = m * 0.5
        k = k + 1
    f = m - 1.0
    den = 2.0 + f
    den_lo = (2.0 - den) + f
    s = f / den
    s_lo = (ptxpy.fma(-s, den, f) - s * den_lo) / den
    sq = s * s
    sq_lo = ptxpy.fma(s, s, -sq)
    cube = sq * s
    cube_lo = ptxpy.fma(sq, s, -cube) + (sq_lo * s + 3.0 * sq * s_lo)
    third = TWO_THIRDS_HI * cube
    third_lo = ptxpy.fma(TWO_THIRDS_HI, cube, -third) + (TWO_THIRDS_HI * cube_lo + TWO_THIRDS_LO * cube)
    rest = cube * sq * _log_tail_f64(sq)
    hi, lo = _fast_two_sum(2.0 * s, third)
    return k, hi, lo + (2.0 * s_lo + third_lo + rest)


@ptxpy.func
def _log_dd_f64(x: f64) -> tuple[f64, f64]:
    """ln(x) = hi + lo for positive finite x (k ln 2 added with k * LN2_HI42 exact)."""
    k, hi, lo = _log_reduced_f64(x)
    big, err = _two_sum(f64(k) * LN2_HI42, hi)
    return _fast_two_sum(big, err + (lo + f64(k) * LN2_LO42))


@ptxpy.func
def _log_special_f64(x: f64) -> f64:
    """log of 0, negative numbers, +inf and NaN (C99 Annex F)."""
    if x == 0.0:
        return -math.inf
    if x < 0.0:
        return math.nan
    return x


@ptxpy.func
def log_f64(x: f64) -> f64:
    if not (x > 0.0 and x < math.inf):
        return _log_special_f64(x)
    hi, lo = _log_dd_f64(x)
    return hi


@ptxpy.func
def log2_f64(x: f64) -> f64:
    """k + ln(m) log2(e), the product in double-double: exact for powers of two."""
    if not (x > 0.0 and x < math.inf):
        return _log_special_f64(x)
    k, hi, lo = _log_reduced_f64(x)
    p = hi * LOG2E_HI
    p_lo = ptxpy.fma(hi, LOG2E_HI, -p) + (hi * LOG2E_LO + lo * LOG2E_HI)
    big, err = _two_sum(f64(k), p)
    return big + (err + p_lo)


@ptxpy.func
def log10_f64(x: f64) -> f64:
    """k log10(2) + ln(m) log10(e), both in double-double."""
    if not (x > 0.0 and x < math.inf):
        return _log_special_f64(x)
    k, hi, lo = _log_reduced_f64(x)
    p = hi * LOG10E_HI
    p_lo = ptxpy.fma(hi, LOG10E_HI, -p) + (hi * LOG10E_LO + lo * LOG10E_HI)
    big, err = _two_sum(f64(k) * LOG10_2_HI42, p)
    return big + (err + (p_lo + f64(k) * LOG10_2_LO42))


# --- trigonometric functions -------------------------------------------------------------------
@ptxpy.func
def _reduce_medium_f64(x: f64) -> tuple[i32, f64, f64]:
    """k and hi + lo with x = k pi/2 + hi + lo, |hi| <= pi/4, for |x| < 2^20 pi/2 (Cody-Waite).

    With |k| <= 2^20 every k * PIO2_i (i < 4) is exact; x - k * PIO2_1 is exact (fma, and the
    difference is a multiple of 2^-53 below 1); the other pieces are subtracted with exact
    error terms. pi/2 is known to about 2^-150 here, enough for the closest approach of a
    double to a multiple of pi/2 (about 2^-61 relative, Muller's "Elementary Functions")."""
    k = ptxpy._rint(x * TWO_OVER_PI)
    a = ptxpy.fma(-k, PIO2_1, x)
    s1, e1 = _two_sum(a, -k * PIO2_2)
    s2, e2 = _two_sum(s1, -k * PIO2_3)
    hi, lo = _two_sum(s2, (e1 + e2) - k * PIO2_4)
    return i32(k), hi, lo


@ptxpy.func
def _reduce_huge_f64(x: f64) -> tuple[i32, f64, f64]:
    """As `_reduce_medium_f64` for finite |x| >= 2^20 pi/2, by Payne-Hanek reduction.

    |x| = m 2^e with m a 53-bit integer and e = exponent - 1075. With 2/pi = sum b_i 2^-i, the
    terms m b_i 2^(e-i) with i <= e - 2 are multiples of 4 and drop out of x 2/pi mod 4. The
    192 bits b_(e-1) ... b_(e+190), as an integer B, give x 2/pi mod 4 = (m B mod 2^192) 2^-190
    up to m 2^-191 < 2^-137: a fixed-point number with 2 integer bits, the quadrant, and 190
    fraction bits, computed with 64-bit integer products. The table holds the bits of 2/pi,
    b_1 starting at bit 64 (word 0 is zero)."""
    table = ptxpy.local_array(20, u64)
    table[0] = 0
    table[1] = 0xA2F9836E4E441529
    table[2] = 0xFC2757D1F534DDC0
    table[3] = 0xDB6295993C439041
    table[4] = 0xFE5163ABDEBBC561
    table[5] = 0xB7246E3A424DD2E0
    table[6] = 0x06492EEA09D1921C
    table[7] = 0xFE1DEB1CB129A73E
    table[8] = 0xE88235F52EBB4484
    table[9] = 0xE99C7026B45F7E41
    table[10] = 0x3991D639835339F4
    table[11] = 0x9C845F8BBDF9283B
    table[12] = 0x1FF897FFDE05980F
    table[13] = 0xEF2F118B5A0A6D1F
    table[14] = 0x6D367ECF27CB09B7
    table[15] = 0x4F463F669E5FEA2D
    table[16] = 0x7527BAC7EBE5F17B
    table[17] = 0x3D0739F78A5292EA
    table[18] = 0x6BFB5FB11F8D5D08
    table[19] = 0x56033046FC7B6BAB
    bits = ptxpy.bitcast(x, u64)
    exponent = i32((bits >> 52) & 0x7FF)
    m = (bits & 0x000FFFFFFFFFFFFF) | 0x0010000000000000
    start = exponent - 1013            # table bit position of b_(e-1): (e - 1) + 63
    word = start >> 6
    shift = u64(start & 63)           # u64, as `u64 << i32` would promote to f64 (as in JAX)
    t0 = table[word]
    t1 = table[word + 1]
    t2 = table[word + 2]
    t3 = table[word + 3]
    b2 = (t0 << shift) | (t1 >> (64 - shift))       # a shift by 64 gives 0, as wanted
    b1 = (t1 << shift) | (t2 >> (64 - shift))
    b0 = (t2 << shift) | (t3 >> (64 - shift))
    # y2 y1 y0 = m * (b2 b1 b0) mod 2^192
    y0 = m * b0
    carry_in = ptxpy._mul_hi(m, b0)
    y1 = m * b1 + carry_in
    carry = u64(1) if y1 < carry_in else u64(0)
    y2 = m * b2 + ptxpy._mul_hi(m, b1) + carry
    quadrant = i32(y2 >> 62)
    # the fraction, left-aligned in 192 bits; from 1/2 on round the quadrant up: the fraction
    # minus one is then what the bits mean as a two's complement number
    f2 = (y2 << 2) | (y1 >> 62)
    f1 = (y1 << 2) | (y0 >> 62)
    f0 = y0 << 2
    if (f2 >> 63) != 0:
        quadrant = quadrant + 1
    # three exact 53-bit pieces of the signed fraction (the last 33 bits, < 2^-159, dropped)
    top = f64(ptxpy.bitcast(f2, i64) >> 11) * 1.1102230246251565e-16                    # 2^-53
    middle = f64(((f2 & 0x7FF) << 42) | (f1 >> 22)) * 1.232595164407831e-32            # 2^-106
    bottom = f64(((f1 & 0x3FFFFF) << 31) | (f0 >> 33)) * 1.3684555315672042e-48        # 2^-159
    frac, frac_lo = _two_sum(top, middle)
    frac, frac_lo = _fast_two_sum(frac, frac_lo + bottom)
    r = frac * PIO2_HI
    r_lo = ptxpy.fma(frac, PIO2_HI, -r) + (frac * PIO2_LO + frac_lo * PIO2_HI)
    if x < 0.0:
        return -quadrant, -r, -r_lo
    return quadrant, r, r_lo


@ptxpy.func
def _reduce_f64(x: f64) -> tuple[i32, f64, f64]:
    """k and hi + lo with x = k pi/2 + hi + lo and |hi| <= pi/4 (about), for finite x."""
    a = abs(x)
    if a <= PI_4:
        return 0, x, 0.0
    if a < MEDIUM_LIMIT:
        return _reduce_medium_f64(x)
    return _reduce_huge_f64(x)


@ptxpy.func
def _sin_kernel_f64(r: f64, r_lo: f64) -> tuple[f64, f64]:
    """sin(r + r_lo) as hi + lo for |r| <= pi/4, |r_lo| <= ulp(r): r + r^3 S(r^2), with the
    first-order correction r_lo cos(r) ~ r_lo (1 - r^2/2)."""
    z = r * r
    tail = r * z * _sin_tail_f64(z) + r_lo * (1.0 - 0.5 * z)
    return _fast_two_sum(r, tail)


@ptxpy.func
def _cos_kernel_f64(r: f64, r_lo: f64) -> tuple[f64, f64]:
    """cos(r + r_lo) as hi + lo for |r| <= pi/4: 1 - r^2/2 + r^4 C(r^2), with 1 - r^2/2 kept
    exactly (r^2 by fma) and the correction -r_lo sin(r) ~ -r_lo r."""
    z = r * r
    z_lo = ptxpy.fma(r, r, -z)
    half = 0.5 * z
    w = 1.0 - half
    lost = (1.0 - w) - half
    tail = z * z * _cos_tail_f64(z) - (0.5 * z_lo + r * r_lo)
    return _fast_two_sum(w, lost + tail)


@ptxpy.func
def _trig_special_f64(x: f64) -> f64:
    """sin, cos and tan of inf and NaN: NaN (the input itself when it is one)."""
    if x != x:
        return x
    return math.nan


@ptxpy.func
def sin_f64(x: f64) -> f64:
    a = abs(x)
    if a < 1.4901161193847656e-08:    # 2^-26 (also +-0, subnormals): x - x^3/6 rounds to x
        return x
    if not a < math.inf:
        return _trig_special_f64(x)
    k, r, r_lo = _reduce_f64(x)
    s, s_lo = _sin_kernel_f64(r, r_lo)
    c, c_lo = _cos_kernel_f64(r, r_lo)
    v = c if (k & 1) != 0 else s
    return -v if (k & 2) != 0 else v


@ptxpy.func
def cos_f64(x: f64) -> f64:
    a = abs(x)
    if a < 7.450580596923828e-09:     # 2^-27: 1 - x^2/2 rounds to 1
        return 1.0
    if not a < math.inf:
        return _trig_special_f64(x)
    k, r, r_lo = _reduce_f64(x)
    s, s_lo = _sin_kernel_f64(r, r_lo)
    c, c_lo = _cos_kernel_f64(r, r_lo)
    v = s if (k & 1) != 0 else c
    return -v if ((k + 1) & 2) != 0 else v


@ptxpy.func
def tan_f64(x: f64) -> f64:
    """sin/cos of the reduced argument, both double-double, divided in double-double; in odd
    quadrants tan(r + pi/2) = -cos(r)/sin(r)."""
    a = abs(x)
    if a < 7.450580596923828e-09:     # 2^-27: x + x^3/3 rounds to x
        return x
    if not a < math.inf:
        return _trig_special_f64(x)
    k, r, r_lo = _reduce_f64(x)
    s, s_lo = _sin_kernel_f64(r, r_lo)
    c, c_lo = _cos_kernel_f64(r, r_lo)
    if (k & 1) != 0:
        t, t_lo = _dd_div(c, c_lo, s, s_lo)
        return -t
    t, t_lo = _dd_div(s, s_lo, c, c_lo)
    return t


# --- tanh, erf ---------------------------------------------------------------------------------
@ptxpy.func
def tanh_f64(x: f64) -> f64:
    """(E - 1) / (E + 1) with E = e^(2|x|) = 2^k (1 + hi + lo): E - 1 and E + 1 are formed with
    exact error terms, so there is no cancellation for small x, and divided in double-double."""
    a = abs(x)
    if not a >= 3.725290298461914e-09:   # 2^-28 (and NaN): x - x^3/3 rounds to x
        return x
    if a > TANH_IS_ONE:
        return math.copysign(1.0, x)
    k, hi, lo = _exp_reduce_f64(a + a, 0.0)
    one, err = _fast_two_sum(1.0, hi)
    scale = _pow2_f64(k)
    e_hi = one * scale
    e_lo = (err + lo) * scale
    num, num_lo = _two_sum(e_hi, -1.0)
    den, den_lo = _two_sum(e_hi, 1.0)
    t, t_lo = _dd_div(num, num_lo + e_lo, den, den_lo + e_lo)
    return math.copysign(t, x)


@ptxpy.func
def _erfc_f64(a: f64) -> f64:
    """erfc(a) = e^(-a^2) erfcx(a) for 1 <= a < 5.93, relative error about 2^-51: a^2 exactly
    (fma) into the exponential, erfcx by two polynomials."""
    sq = a * a
    sq_lo = ptxpy.fma(a, a, -sq)
    k, hi, lo = _exp_reduce_f64(-sq, -sq_lo)
    g = _erfcx_near_f64(a - 1.5) if a < 2.0 else _erfcx_far_f64(1.0 / a - 0.33)
    one, err = _fast_two_sum(1.0, hi)
    return (one * g + (err + lo) * g) * _pow2_f64(k)


@ptxpy.func
def erf_f64(x: f64) -> f64:
    """x (1 + P(x^2)) below 1; 1 - erfc(|x|) with the sign of x above (erfc < 0.16 there, so
    its relative error shrinks by that factor)."""
    if x != x:
        return x
    a = abs(x)
    if a < 1.0:                       # also +-0 and subnormals (x + x * EFX, rounded once)
        return ptxpy.fma(x, _erf_small_f64(x * x), x)
    if a >= ERF_IS_ONE:
        return math.copysign(1.0, x)
    return math.copysign(1.0 - _erfc_f64(a), x)


# --- pow ---------------------------------------------------------------------------------------
@ptxpy.func
def _pow_special_f64(x: f64, y: f64) -> f64:
    """pow(x, y) for x = +-0 or +-inf, or y = +-inf (C99 Annex F; x, y not NaN, y != 0)."""
    ax = abs(x)
    if math.isinf(y):
        if ax == 1.0:
            return 1.0
        return math.inf if (ax > 1.0) == (y > 0.0) else 0.0
    magnitude: f64 = math.inf if (x == 0.0) == (y < 0.0) else 0.0
    return math.copysign(magnitude, x) if _is_odd_integer_f64(y) else magnitude


@ptxpy.func
def _is_odd_integer_f64(y: f64) -> bool:
    return abs(y) < 9007199254740992.0 and math.floor(y) == y and (i64(y) & 1) != 0


@ptxpy.func
def pow_f64(x: f64, y: f64) -> f64:
    """x^y = e^(y ln|x|): ln|x| in double-double (relative error 2^-64), y times it in
    double-double, the exponential of that sum; the sign from odd integer y."""
    if y == 0.0 or x == 1.0:
        return 1.0
    if x != x:
        return x
    if y != y:
        return y
    if x == 0.0 or math.isinf(x) or math.isinf(y):
        return _pow_special_f64(x, y)
    if x < 0.0 and math.floor(y) != y:
        return math.nan
    hi, lo = _log_dd_f64(abs(x))
    p = y * hi
    magnitude: f64 = 0.0
    if p > 710.0:
        magnitude = math.inf
    elif p < -746.0:
        magnitude = 0.0
    else:
        p_lo = ptxpy.fma(y, hi, -p) + y * lo
        k, e_hi, e_lo = _exp_reduce_f64(p, p_lo)
        magnitude = _exp_finish_f64(k, e_hi, e_lo)
    if x < 0.0 and _is_odd_integer_f64(y):
        return -magnitude
    return magnitude


# --- f32 ---------------------------------------------------------------------------------------
# The same algorithms in f32 arithmetic, with double-f32 (hi + lo pairs of f32) where the f64
# versions use double-double: f64 instructions are 2 to 64 times slower than f32 ones, depending
# on the GPU. Only pow (which needs ln x to 2^-40) and the Payne-Hanek reduction of huge
# arguments of sin/cos/tan use f64.
LN2_F32 = 0.6931471824645996             # ln 2 rounded to f32
LN2_LO_F32 = -1.9046542121259336e-09     # ln 2 - LN2_F32
LN2_HI16 = 0.693145751953125             # ln 2 to 16 bits: k * LN2_HI16 is exact for |k| < 2^8
LN2_LO16 = 1.428606765330187e-06
INV_LN2_F32 = 1.4426950216293335
LOG2E_HI_F32 = 1.4426950216293335        # log2(e) = LOG2E_HI_F32 + LOG2E_LO_F32
LOG2E_LO_F32 = 1.925963033500011e-08
LOG10E_HI_F32 = 0.4342944920063019
LOG10E_LO_F32 = -1.0103049952192578e-08
LOG10_2_HI16 = 0.301025390625
LOG10_2_LO16 = 4.605039066518657e-06
SQRT2_F32 = 1.4142135381698608
SMALLEST_NORMAL_F32 = 1.1754943508222875e-38
TWO_23 = 8388608.0
PI_4_F32 = 0.7853981852531433
TWO_OVER_PI_F32 = 0.6366197466850281
PIO2_1_F32 = 1.5707963705062866         # pi/2 = PIO2_1_F32 + PIO2_2_F32 + PIO2_3_F32 + ...
PIO2_2_F32 = -4.371138828673793e-08
PIO2_3_F32 = -1.7151245100058819e-15
MEDIUM_LIMIT_F32 = 102900.0              # just below 2^16 pi/2
EFX_F32 = 0.12837916612625122
ERF_IS_ONE_F32 = 3.919205843636722       # erfc(x) < 2^-25 above: erff rounds to 1
TANH_IS_ONE_F32 = 9.02                   # 1 - tanh(x) < 2^-25 above


@ptxpy.func
def _exp_quadratic_f32(r: f32) -> f32:
    """(e^r - 1 - r) / r^2 for |r| <= ln(2)/2: degree 5, relative error 2^-26.7."""
    p = f32(0.00019890991)
    p = ptxpy.fma(p, r, 0.001393365)
    p = ptxpy.fma(p, r, 0.0083333105)
    p = ptxpy.fma(p, r, 0.041666467)
    p = ptxpy.fma(p, r, 0.16666667)
    p = ptxpy.fma(p, r, 0.5)
    return p


@ptxpy.func
def _log_quadratic_f32(z: f32) -> f32:
    """(2 atanh(s) - 2s) / s^3 with z = s^2, |s| <= (sqrt(2)-1)/(sqrt(2)+1): degree 3,
    relative error 2^-24.8."""
    p = f32(0.23330468)
    p = ptxpy.fma(p, z, 0.28550822)
    p = ptxpy.fma(p, z, 0.40000123)
    p = ptxpy.fma(p, z, 0.6666667)
    return p


@ptxpy.func
def _sin_tail_f32(z: f32) -> f32:
    """(sin(r) - r) / r^3 with z = r^2, |r| <= pi/4: degree 3, relative error 2^-24.9."""
    p = f32(2.7249926e-06)
    p = ptxpy.fma(p, z, -0.00019840087)
    p = ptxpy.fma(p, z, 0.008333332)
    p = ptxpy.fma(p, z, -0.16666667)
    return p


@ptxpy.func
def _cos_tail_f32(z: f32) -> f32:
    """(cos(r) - 1 + r^2/2) / r^4 with z = r^2, |r| <= pi/4: degree 3, relative error 2^-25.0."""
    p = f32(-2.730096e-07)
    p = ptxpy.fma(p, z, 2.48006e-05)
    p = ptxpy.fma(p, z, -0.0013888888)
    p = ptxpy.fma(p, z, 0.041666668)
    return p


@ptxpy.func
def _erf_small_f32(z: f32) -> f32:
    """erf(x)/x - 1 with z = x^2, |x| <= 1: degree 7, absolute error 2^-29.2."""
    p = f32(-9.667045e-06)
    p = ptxpy.fma(p, z, 0.00011265959)
    p = ptxpy.fma(p, z, -0.00084840803)
    p = ptxpy.fma(p, z, 0.0052210316)
    p = ptxpy.fma(p, z, -0.02686543)
    p = ptxpy.fma(p, z, 0.11283782)
    p = ptxpy.fma(p, z, -0.37612638)
    p = ptxpy.fma(p, z, 0.12837917)
    return p


@ptxpy.func
def _erfcx_near_f32(w: f32) -> f32:
    """erfc(a) e^(a^2) for 1 <= a <= 2, in w = a - 1.5: degree 9, relative error 2^-28.3."""
    p = f32(-7.717365e-05)
    p = ptxpy.fma(p, w, 0.0002381396)
    p = ptxpy.fma(p, w, -0.0006609315)
    p = ptxpy.fma(p, w, 0.0018828528)
    p = ptxpy.fma(p, w, -0.005146047)
    p = ptxpy.fma(p, w, 0.013377636)
    p = ptxpy.fma(p, w, -0.032930903)
    p = ptxpy.fma(p, w, 0.07615103)
    p = ptxpy.fma(p, w, -0.16362292)
    p = ptxpy.fma(p, w, 0.32158542)
    return p


@ptxpy.func
def _erfcx_far_f32(w: f32) -> f32:
    """erfc(a) e^(a^2) for 2 <= a <= 3.93, in w = 1/a - 0.38: degree 7, relative error 2^-29.9."""
    p = f32(0.102590464)
    p = ptxpy.fma(p, w, 0.03324052)
    p = ptxpy.fma(p, w, -0.12948956)
    p = ptxpy.fma(p, w, 0.13047045)
    p = ptxpy.fma(p, w, -0.02292296)
    p = ptxpy.fma(p, w, -0.18646428)
    p = ptxpy.fma(p, w, 0.47215292)
    p = ptxpy.fma(p, w, 0.20143805)
    return p


@ptxpy.func
def _two_sum_f32(a: f32, b: f32) -> tuple[f32, f32]:
    s = a + b
    b_part = s - a
    return s, (a - (s - b_part)) + (b - b_part)


@ptxpy.func
def _fast_two_sum_f32(a: f32, b: f32) -> tuple[f32, f32]:
    s = a + b
    return s, b - (s - a)


@ptxpy.func
def _df_div_f32(num: f32, num_lo: f32, den: f32, den_lo: f32) -> f32:
    """(num + num_lo) / (den + den_lo) for |num_lo| <= ulp(num) and |den_lo| <= ulp(den),
    rounded once (the first-order remainder is exact by fma; what it neglects is ~2^-46)."""
    q = num / den
    remainder = ptxpy.fma(-q, den, num) + (num_lo - q * den_lo)
    return q + remainder / den


@ptxpy.func
def _pow2_f32(k: i32) -> f32:
    """2^k for -126 <= k <= 127."""
    return ptxpy.bitcast(u32(k + 127) << 23, f32)


@ptxpy.func
def _scale_f32(y: f32, k: i32) -> f32:
    """y * 2^k for y in [1/2, 2] and |k| <= 250, rounded once (twice in the subnormals)."""
    half = k >> 1
    return (y * _pow2_f32(half)) * _pow2_f32(k - half)


@ptxpy.func
def _exp_reduced_f32(r: f32, r_lo: f32) -> tuple[f32, f32]:
    """e^(r + r_lo) = hi + lo for |r| <= ln(2)/2 (+ 10^-5) and |r_lo| <= 2^-20, to about 2^-28.

    hi = fl(1 + r) and its exact error; r^2 exactly (fma) times the polynomial
    (e^r - 1 - r)/r^2; r_lo to first order, r_lo e^r ~ r_lo (1 + r + r^2/2)."""
    sq = r * r
    sq_lo = ptxpy.fma(r, r, -sq)
    one = 1.0 + r
    err = (1.0 - one) + r
    correction = r_lo * ptxpy.fma(sq, 0.5, one)
    tail = ptxpy.fma(sq, _exp_quadratic_f32(r), ptxpy.fma(0.5, sq_lo, correction))
    return one, err + tail


@ptxpy.func
def _exp_parts_f32(x: f32, x_lo: f32) -> tuple[i32, f32, f32]:
    """k and hi + lo with e^(x + x_lo) = 2^k (hi + lo), for |x| <= 110, |x_lo| <= 2^-21.
    x - k * LN2_F32 is exact by fma (a multiple of 2^-24 below 1/2); the rest of k ln 2 is at
    most 2^-21.7 and joins x_lo."""
    k = ptxpy._rint(x * INV_LN2_F32)
    r = ptxpy.fma(-k, LN2_F32, x)
    hi, lo = _exp_reduced_f32(r, ptxpy.fma(-k, LN2_LO_F32, x_lo))
    return i32(k), hi, lo


@ptxpy.func
def exp_f32(x: f32) -> f32:
    if x != x:
        return x
    k, hi, lo = _exp_parts_f32(min(max(x, -104.0), 89.0), 0.0)
    return _scale_f32(hi + lo, k)


@ptxpy.func
def exp2_f32(x: f32) -> f32:
    """2^k e^(f ln 2) with k = rint(x) and f = x - k exact; f ln 2 as a double-f32."""
    if x != x:
        return x
    t = min(max(x, -152.0), 130.0)
    k = ptxpy._rint(t)
    f = t - k
    r = f * LN2_F32
    r_lo = ptxpy.fma(f, LN2_F32, -r) + f * LN2_LO_F32
    hi, lo = _exp_reduced_f32(r, r_lo)
    return _scale_f32(hi + lo, i32(k))


@ptxpy.func
def _log_reduced_f32(x: f32) -> tuple[i32, f32, f32]:
    """k and hi + lo with ln(x) = k ln 2 + hi + lo for positive finite x, to about 2^-30.

    x = 2^k (1 + f), 1 + f in [sqrt(1/2), sqrt(2)], and ln(1 + f) = f - f^2/2 + s (f^2/2 + R)
    with s = f / (2 + f) and R = (2 atanh(s) - 2s) / s = s^2 P(s^2) (FreeBSD's logf identity,
    from 2s = f - s f): the
    main terms f - f^2/2 are exact as a double-f32 (f^2 by fma), s only scales a small
    correction."""
    k = 0
    scaled = x
    if x < SMALLEST_NORMAL_F32:
        scaled = x * TWO_23
        k = -23
    bits = ptxpy.bitcast(scaled, u32)
    k = k + i32(bits >> 23) - 127
    m = ptxpy.bitcast((bits & 0x007FFFFF) | 0x3F800000, f32)          # in [1, 2)
    if m > SQRT2_F32:
        m = m * 0.5
        k = k + 1
    f = m - 1.0
    s = f / (2.0 + f)
    sq = f * f
    half_sq = 0.5 * sq
    half_sq_lo = 0.5 * ptxpy.fma(f, f, -sq)
    hi, err = _fast_two_sum_f32(f, -half_sq)
    z = s * s
    correction = s * ptxpy.fma(z, _log_quadratic_f32(z), half_sq)
    return k, hi, err + (correction - half_sq_lo)


@ptxpy.func
def _log_special_f32(x: f32) -> f32:
    if x == 0.0:
        return -math.inf
    if x < 0.0:
        return math.nan
    return x


@ptxpy.func
def log_f32(x: f32) -> f32:
    if not (x > 0.0 and x < math.inf):
        return _log_special_f32(x)
    k, hi, lo = _log_reduced_f32(x)
    big, err = _two_sum_f32(f32(k) * LN2_HI16, hi)
    return big + (err + (lo + f32(k) * LN2_LO16))


@ptxpy.func
def log2_f32(x: f32) -> f32:
    if not (x > 0.0 and x < math.inf):
        return _log_special_f32(x)
    k, hi, lo = _log_reduced_f32(x)
    p = hi * LOG2E_HI_F32
    p_lo = ptxpy.fma(hi, LOG2E_HI_F32, -p) + (hi * LOG2E_LO_F32 + lo * LOG2E_HI_F32)
    big, err = _two_sum_f32(f32(k), p)
    return big + (err + p_lo)


@ptxpy.func
def log10_f32(x: f32) -> f32:
    if not (x > 0.0 and x < math.inf):
        return _log_special_f32(x)
    k, hi, lo = _log_reduced_f32(x)
    p = hi * LOG10E_HI_F32
    p_lo = ptxpy.fma(hi, LOG10E_HI_F32, -p) + (hi * LOG10E_LO_F32 + lo * LOG10E_HI_F32)
    big, err = _two_sum_f32(f32(k) * LOG10_2_HI16, p)
    return big + (err + (p_lo + f32(k) * LOG10_2_LO16))


@ptxpy.func
def _reduce_f32(x: f32) -> tuple[i32, f32, f32]:
    """k and hi + lo with x = k pi/2 + hi + lo, |hi| <= pi/4 (about), for finite x.

    Below 2^16 pi/2, Cody-Waite in f32: x - k * PIO2_1_F32 is exact by fma; k * PIO2_2_F32 is
    split exactly into two f32 by fma and subtracted with an exact error term; the third piece
    is small enough to round. Above, the f64 Payne-Hanek reduction, its result split into f32."""
    a = abs(x)
    if a <= PI_4_F32:
        return 0, x, f32(0.0)
    if a < MEDIUM_LIMIT_F32:
        k = ptxpy._rint(x * TWO_OVER_PI_F32)
        r = ptxpy.fma(-k, PIO2_1_F32, x)
        product = k * PIO2_2_F32
        product_lo = ptxpy.fma(k, PIO2_2_F32, -product)
        s, err = _two_sum_f32(r, -product)
        hi, lo = _fast_two_sum_f32(s, ptxpy.fma(-k, PIO2_3_F32, err - product_lo))
        return i32(k), hi, lo
    q, r64, r64_lo = _reduce_huge_f64(f64(x))
    hi = f32(r64)
    return q, hi, f32((r64 - f64(hi)) + r64_lo)


@ptxpy.func
def _sin_kernel_f32(r: f32, r_lo: f32) -> tuple[f32, f32]:
    """sin(r + r_lo) = hi + lo for |r| <= pi/4 (see _sin_kernel_f64)."""
    z = r * r
    tail = r * z * _sin_tail_f32(z) + r_lo * (1.0 - 0.5 * z)
    return _fast_two_sum_f32(r, tail)


@ptxpy.func
def _cos_kernel_f32(r: f32, r_lo: f32) -> tuple[f32, f32]:
    """cos(r + r_lo) = hi + lo for |r| <= pi/4 (see _cos_kernel_f64)."""
    z = r * r
    z_lo = ptxpy.fma(r, r, -z)
    half = 0.5 * z
    w = 1.0 - half
    lost = (1.0 - w) - half
    tail = z * z * _cos_tail_f32(z) - (0.5 * z_lo + r * r_lo)
    return _fast_two_sum_f32(w, lost + tail)


@ptxpy.func
def _trig_special_f32(x: f32) -> f32:
    if x != x:
        return x
    return math.nan


@ptxpy.func
def sin_f32(x: f32) -> f32:
    a = abs(x)
    if a < 0.000244140625:          # 2^-12 (also +-0, subnormals): x - x^3/6 rounds to x
        return x
    if not a < math.inf:
        return _trig_special_f32(x)
    k, r, r_lo = _reduce_f32(x)
    s, s_lo = _sin_kernel_f32(r, r_lo)
    c, c_lo = _cos_kernel_f32(r, r_lo)
    v = c if (k & 1) != 0 else s
    return -v if (k & 2) != 0 else v


@ptxpy.func
def cos_f32(x: f32) -> f32:
    a = abs(x)
    if a < 0.000244140625:          # 2^-12: 1 - x^2/2 rounds to 1
        return 1.0
    if not a < math.inf:
        return _trig_special_f32(x)
    k, r, r_lo = _reduce_f32(x)
    s, s_lo = _sin_kernel_f32(r, r_lo)
    c, c_lo = _cos_kernel_f32(r, r_lo)
    v = s if (k & 1) != 0 else c
    return -v if ((k + 1) & 2) != 0 else v


@ptxpy.func
def tan_f32(x: f32) -> f32:
    a = abs(x)
    if a < 0.000244140625:          # 2^-12: x + x^3/3 rounds to x
        return x
    if not a < math.inf:
        return _trig_special_f32(x)
    k, r, r_lo = _reduce_f32(x)
    s, s_lo = _sin_kernel_f32(r, r_lo)
    c, c_lo = _cos_kernel_f32(r, r_lo)
    if (k & 1) != 0:
        return -_df_div_f32(c, c_lo, s, s_lo)
    return _df_div_f32(s, s_lo, c, c_lo)


@ptxpy.func
def tanh_f32(x: f32) -> f32:
    """As tanh_f64: (E - 1) / (E + 1), E = e^(2|x|) as a scaled double-f32."""
    a = abs(x)
    if not a >= 0.000244140625:     # 2^-12 (and NaN): x - x^3/3 rounds to x
        return x
    if a > TANH_IS_ONE_F32:
        return math.copysign(1.0, x)
    k, hi0, lo0 = _exp_parts_f32(a + a, 0.0)
    hi, lo = _fast_two_sum_f32(hi0, lo0)       # lo below ulp(hi), as the division assumes
    scale = _pow2_f32(k)
    e_hi = hi * scale
    e_lo = lo * scale
    num, num_lo = _two_sum_f32(e_hi, -1.0)
    den, den_lo = _two_sum_f32(e_hi, 1.0)
    return math.copysign(_df_div_f32(num, num_lo + e_lo, den, den_lo + e_lo), x)


@ptxpy.func
def erf_f32(x: f32) -> f32:
    """As erf_f64: x (1 + P(x^2)) below 1, 1 - e^(-x^2) erfcx(|x|) above, 1 from 3.92."""
    if x != x:
        return x
    a = abs(x)
    if a < 1.0:
        return ptxpy.fma(x, _erf_small_f32(x * x), x)
    if a >= ERF_IS_ONE_F32:
        return math.copysign(1.0, x)
    sq = a * a
    sq_lo = ptxpy.fma(a, a, -sq)
    k, hi, lo = _exp_parts_f32(-sq, -sq_lo)
    g = _erfcx_near_f32(a - 1.5) if a < 2.0 else _erfcx_far_f32(1.0 / a - 0.38)
    erfc = (hi * g + lo * g) * _pow2_f32(k)
    return math.copysign(1.0 - erfc, x)


@ptxpy.func
def pow_f32(x: f32, y: f32) -> f32:
    """pow_f64, rounded once: ln x must be known to about 2^-40 for a 1-ulp f32 power, beyond
    what f32 arithmetic gives cheaply (CUDA's powf also computes in wider precision). A NaN
    is returned before any conversion, so its bits are kept."""
    if y == 0.0 or x == 1.0:
        return 1.0
    if x != x:
        return x
    if y != y:
        return y
    return f32(pow_f64(f64(x), f64(y)))


# --- remainders: math.fmod, and Python's float // and % -----------------------------------------
# The remainder x - n*y of a truncated quotient n is representable in the type of x and y, so it
# is computed exactly. Where the quotient is below 2^(p-1) (p the precision), from the rounded
# division and one fma (`_fmod_small_quotient_*`); else by long division of the significands,
# one bit a step, as musl does: a step per binade between x and y (at most 277 for f32, 2099
# for f64), then a step per bit of cancellation. Python's // and % (and NumPy's) are built on it.
@ptxpy.func
def _fmod_small_quotient_f64(x: f64, y: f64) -> f64:
    """fmod for |x| > |y|, y normal and |x / y| < 2^52. With n the true truncated quotient,
    q = floor(|x| / |y|) of the rounded division is n, or n + 1 where the quotient rounds up to
    the next integer (n is representable and rounding is monotonic). fma(-q, |y|, |x|) is then
    the remainder r, exactly (it is representable), or r - |y|: exact as well (a multiple of the
    smaller ulp of x and y, below |y| in magnitude; Sterbenz's lemma where n = 0), and negative,
    and adding |y| gives r exactly."""
    ax = abs(x)
    ay = abs(y)
    r = ptxpy.fma(-math.floor(ax / ay), ay, ax)
    if r < 0.0:
        r += ay
    return math.copysign(r, x)


@ptxpy.func
def fmod_f64(x: f64, y: f64) -> f64:
    """C's fmod: x - n*y for n = trunc(x / y), exact, with the sign of x; x for an infinite
    y; NaN for an infinite x, a zero y or a NaN."""
    ux = ptxpy.bitcast(x, u64)
    uy = ptxpy.bitcast(y, u64)
    ex = i32(ux >> 52) & 0x7FF
    ey = i32(uy >> 52) & 0x7FF
    if (uy << 1) == 0 or ex == 0x7FF or y != y:
        return (x * y) / (x * y)
    if (ux << 1) <= (uy << 1):
        return x * 0.0 if (ux << 1) == (uy << 1) else x
    if ey != 0 and ex - ey < 52:
        return _fmod_small_quotient_f64(x, y)
    mx = ux & 0xFFFFFFFFFFFFF
    my = uy & 0xFFFFFFFFFFFFF
    if ex == 0:                     # a subnormal: its leading one to bit 52
        ex = 1
        while mx < 0x10000000000000:
            mx <<= 1
            ex -= 1
    else:
        mx |= 0x10000000000000
    if ey == 0:
        ey = 1
        while my < 0x10000000000000:
            my <<= 1
            ey -= 1
    else:
        my |= 0x10000000000000
    while ex > ey:                  # mx < 2 my throughout
        if mx >= my:
            mx -= my
        mx <<= 1
        ex -= 1
    if mx >= my:
        mx -= my
    if mx == 0:
        return x * 0.0
    while mx < 0x10000000000000:
        mx <<= 1
        ex -= 1
    if ex > 0:
        mx = (mx & 0xFFFFFFFFFFFFF) | (u64(ex) << 52)
    else:                           # subnormal: the bits shifted out are zeros (it is exact)
        mx >>= u32(1 - ex)
    return ptxpy.bitcast(mx | (ux & (u64(1) << 63)), f64)


@ptxpy.func
def floormod_f64(x: f64, y: f64) -> f64:
    """Python's x % y: the exact remainder, moved into y's sign; zero takes y's sign; NaN for
    y == 0 (where Python raises)."""
    mod = fmod_f64(x, y)
    if mod == 0.0:
        return math.copysign(0.0, y)
    if (y < 0.0) != (mod < 0.0):
        mod += y
    return mod


@ptxpy.func
def floordiv_f64(x: f64, y: f64) -> f64:
    """Python's x // y: (x - mod) / y for the exact remainder mod, one less where mod moves
    into y's sign, snapped to the integer it must be; x / y for y == 0 (where Python raises)."""
    if y == 0.0:
        return x / y
    mod = fmod_f64(x, y)
    div = (x - mod) / y
    if mod != 0.0 and (y < 0.0) != (mod < 0.0):
        div -= 1.0
    if div == 0.0:
        return math.copysign(0.0, x / y)
    q = math.floor(div)
    if div - q > 0.5:
        q += 1.0
    return q


@ptxpy.func
def _fmod_small_quotient_f32(x: f32, y: f32) -> f32:
    """_fmod_small_quotient_f64 in f32, for |x / y| < 2^23."""
    ax = abs(x)
    ay = abs(y)
    r = ptxpy.fma(-math.floor(ax / ay), ay, ax)
    if r < 0.0:
        r += ay
    return math.copysign(r, x)


@ptxpy.func
def fmod_f32(x: f32, y: f32) -> f32:
    """fmod_f64 in f32 (C's fmodf)."""
    ux = ptxpy.bitcast(x, u32)
    uy = ptxpy.bitcast(y, u32)
    ex = i32(ux >> 23) & 0xFF
    ey = i32(uy >> 23) & 0xFF
    if (uy << 1) == 0 or ex == 0xFF or y != y:
        return (x * y) / (x * y)
    if (ux << 1) <= (uy << 1):
        return x * 0.0 if (ux << 1) == (uy << 1) else x
    if ey != 0 and ex - ey < 23:
        return _fmod_small_quotient_f32(x, y)
    mx = ux & 0x7FFFFF
    my = uy & 0x7FFFFF
    if ex == 0:
        ex = 1
        while mx < 0x800000:
            mx <<= 1
            ex -= 1
    else:
        mx |= 0x800000
    if ey == 0:
        ey = 1
        while my < 0x800000:
            my <<= 1
            ey -= 1
    else:
        my |= 0x800000
    while ex > ey:
        if mx >= my:
            mx -= my
        mx <<= 1
        ex -= 1
    if mx >= my:
        mx -= my
    if mx == 0:
        return x * 0.0
    while mx < 0x800000:
        mx <<= 1
        ex -= 1
    if ex > 0:
        mx = (mx & 0x7FFFFF) | (u32(ex) << 23)
    else:
        mx >>= u32(1 - ex)
    return ptxpy.bitcast(mx | (ux & u32(0x80000000)), f32)


@ptxpy.func
def floormod_f32(x: f32, y: f32) -> f32:
    """floormod_f64 in f32 (NumPy's float32 %)."""
    mod = fmod_f32(x, y)
    if mod == 0.0:
        return math.copysign(0.0, y)
    if (y < 0.0) != (mod < 0.0):
        mod += y
    return mod


@ptxpy.func
def floordiv_f32(x: f32, y: f32) -> f32:
    """floordiv_f64 in f32 (NumPy's float32 //)."""
    if y == 0.0:
        return x / y
    mod = fmod_f32(x, y)
    div = (x - mod) / y
    if mod != 0.0 and (y < 0.0) != (mod < 0.0):
        div -= 1.0
    if div == 0.0:
        return math.copysign(0.0, x / y)
    q = math.floor(div)
    if div - q > 0.5:
        q += 1.0
    return q


# === inverse trigonometric functions: atan asin acos atan2 =======================================
# atan: atan(|x|) = atan(c) + atan(t) with t = (|x| - c) / (1 + c|x|), c = 0, 1/2, 1, 3/2 from the
# breakpoints 7/16, 11/16, 19/16, 39/16 (fdlibm's), and t = -1/|x|, c = pi/2 above: |t| <= 7/16.
# The numerator is exact (Sterbenz's lemma), the denominator carries its exact error, and t is
# divided as a double-word number; atan(c) is a hi + lo constant and atan(t) = t + t^3 P(t^2),
# the tail below 0.064 |t|. So only P's error (2^-53 of the tail) and the last rounding count:
# about 0.5 ulp. atan2 reduces |y|/|x| or |x|/|y| (at most 1) the same way, with the two
# numbers in the numerator and denominator (c = 0, 1/2, 1), then adds 0, pi/2 or pi.
# asin: s + s^3 Q(s^2) below 1/2; above, asin(a) = pi/2 - 2 asin(s), s = sqrt((1 - a)/2) with
# (1 - a)/2 exact and s as a double-word number (the square root's error by fma), so s^2 is
# the polynomial's exact argument; acos(x) = pi/2 - asin(x), 2 asin(s) or pi - 2 asin(s). The
# tail s^3 Q is at most 0.047 of asin(s) and the sums with pi/2 or pi are exact (pi/2 - 2s
# loses at most one bit, at 1/2), so again about 0.5 ulp. Measured maxima: docs/math.md.
ATAN_HALF_HI = 0.4636476090008061         # atan(1/2) = ATAN_HALF_HI + ATAN_HALF_LO
ATAN_HALF_LO = 2.2698777452961687e-17
ATAN_3_2_HI = 0.982793723247329           # atan(3/2)
ATAN_3_2_LO = 1.3903311031230998e-17
PI_4_LO = 3.061616997868383e-17           # pi/4 = PI_4 + PI_4_LO
PI_HI = 3.141592653589793                 # pi = PI_HI + PI_LO
PI_LO = 1.2246467991473532e-16
ATAN_HALF_F32 = 0.4636476                 # the same constants as pairs of f32
ATAN_HALF_LO_F32 = 5.0121587e-09
ATAN_3_2_F32 = 0.98279375
ATAN_3_2_LO_F32 = -2.5131424e-08
PI_4_LO_F32 = -2.1855694e-08              # pi/4 = PI_4_F32 + PI_4_LO_F32
PIO2_F32 = 1.5707964
PIO2_LO_F32 = -4.371139e-08
PI_F32 = 3.1415927
PI_LO_F32 = -8.742278e-08


@ptxpy.func
def _atan_tail_f64(z: f64) -> f64:
    """(atan(t) - t) / t^3 with z = t^2, |t| <= 7/16: degree 11, relative error 2^-53.9."""
    p = f64(0.014773170805505996)
    p = ptxpy.fma(p, z, -0.03312812035021133)
    p = ptxpy.fma(p, z, 0.04492258689861356)
    p = ptxpy.fma(p, z, -0.05216679591725568)
    p = ptxpy.fma(p, z, 0.058769464343940855)
    p = ptxpy.fma(p, z, -0.06666241921189762)
    p = ptxpy.fma(p, z, 0.07692285554754445)
    p = ptxpy.fma(p, z, -0.09090908355597388)
    p = ptxpy.fma(p, z, 0.1111111109664492)
    p = ptxpy.fma(p, z, -0.14285714285566806)
    p = ptxpy.fma(p, z, 0.1999999999999941)
    p = ptxpy.fma(p, z, -0.3333333333333333)
    return p


@ptxpy.func
def _asin_tail_f64(z: f64) -> f64:
    """(asin(s) - s) / s^3 with z = s^2, |s| <= 1/2: degree 12, relative error 2^-52.9."""
    p = f64(0.028757851418878863)
    p = ptxpy.fma(p, z, -0.01485188714500846)
    p = ptxpy.fma(p, z, 0.017400879488853244)
    p = ptxpy.fma(p, z, 0.005457506702085633)
    p = ptxpy.fma(p, z, 0.01032281435394111)
    p = ptxpy.fma(p, z, 0.01147917741462388)
    p = ptxpy.fma(p, z, 0.013971212973608663)
    p = ptxpy.fma(p, z, 0.017352392720866344)
    p = ptxpy.fma(p, z, 0.022372172942150038)
    p = ptxpy.fma(p, z, 0.030381944138531243)
    p = ptxpy.fma(p, z, 0.04464285714635543)
    p = ptxpy.fma(p, z, 0.07499999999998433)
    p = ptxpy.fma(p, z, 0.16666666666666669)
    return p


@ptxpy.func
def _atan_tail_f32(z: f32) -> f32:
    """(atan(t) - t) / t^3 with z = t^2, |t| <= 7/16: degree 5, relative error 2^-24.7."""
    p = f32(0.04822301)
    p = ptxpy.fma(p, z, -0.08532126)
    p = ptxpy.fma(p, z, 0.11058228)
    p = ptxpy.fma(p, z, -0.142834)
    p = ptxpy.fma(p, z, 0.19999963)
    p = ptxpy.fma(p, z, -0.33333334)
    return p


@ptxpy.func
def _asin_tail_f32(z: f32) -> f32:
    """(asin(s) - s) / s^3 with z = s^2, |s| <= 1/2: degree 5, relative error 2^-24.0."""
    p = f32(0.033690874)
    p = ptxpy.fma(p, z, 0.017149225)
    p = ptxpy.fma(p, z, 0.031100666)
    p = ptxpy.fma(p, z, 0.044599403)
    p = ptxpy.fma(p, z, 0.07500094)
    p = ptxpy.fma(p, z, 0.16666666)
    return p


@ptxpy.func
def _atan_sum_f64(c: f64, c_lo: f64, t: f64, t_lo: f64) -> tuple[f64, f64]:
    """c + c_lo + atan(t + t_lo) as hi + lo, for |t| <= 7/16, |t_lo| <= ulp(t), c = 0 or
    |c| >= |t|: atan(t) = t + t^3 P(t^2) and t_lo / (1 + t^2) ~ t_lo (1 - t^2) (off by
    t_lo t^4 < 2^-57 |t|); c + t exactly, the rest (below 0.07 of the result) rounded."""
    z = t * t
    tail = ptxpy.fma(t * z, _atan_tail_f64(z), ptxpy.fma(-t_lo, z, t_lo))
    hi, err = _fast_two_sum(c, t)
    return hi, err + (c_lo + tail)


@ptxpy.func
def atan_f64(x: f64) -> f64:
    """c and the quotient's operands chosen by |x|, then one path: one double-word division,
    one polynomial; the sign of x (copysign keeps atan(-0) = -0)."""
    if x != x:
        return x
    a = abs(x)
    k: f64 = 0.0
    c: f64 = 0.0
    c_lo: f64 = 0.0
    if a >= 0.4375:
        k = 0.5
        c = ATAN_HALF_HI
        c_lo = ATAN_HALF_LO
    if a >= 0.6875:
        k = 1.0
        c = PI_4
        c_lo = PI_4_LO
    if a >= 1.1875:
        k = 1.5
        c = ATAN_3_2_HI
        c_lo = ATAN_3_2_LO
    num = a - k
    p = k * a
    den, den_lo = _two_sum(1.0, p)
    den_lo = den_lo + ptxpy.fma(k, a, -p)
    if a >= 2.4375:                   # atan(2^64) rounds to pi/2; the clamp keeps 1/inf's remainder finite
        num = -1.0
        den = min(a, 18446744073709551616.0)
        den_lo = 0.0
        c = PIO2_HI
        c_lo = PIO2_LO
    t, t_lo = _dd_div(num, 0.0, den, den_lo)
    hi, lo = _atan_sum_f64(c, c_lo, t, t_lo)
    return math.copysign(hi + lo, x)


@ptxpy.func
def _atan_ratio_f64(n: f64, d: f64) -> tuple[f64, f64]:
    """atan(n/d) as hi + lo for 0 < n <= d < inf. Below 2^-40 the quotient, rounded once, is the
    answer (atan(q) = q (1 - q^2/3)). Else n and d are scaled (exactly) away from overflow and
    from the subnormals, where the remainder of the division would not be exact; then
    c = 0, 1/2 or 1 by the quotient, t = (n - c d) / (d + c n) with an exact numerator
    (Sterbenz) and denominator (c n is exact)."""
    q = n / d
    if q < 9.094947017729282e-13:     # 2^-40
        return q, 0.0
    scale: f64 = 1.0
    if d > 1.0715086071862673e+301:   # 2^1000
        scale = 4.9090934652977266e-91     # 2^-300
    if d < 1.4708983551653345e-271:   # 2^-900
        scale = 2.037035976334486e+90      # 2^300
    n = n * scale
    d = d * scale
    k: f64 = 0.0
    c: f64 = 0.0
    c_lo: f64 = 0.0
    if q >= 0.4375:
        k = 0.5
        c = ATAN_HALF_HI
        c_lo = ATAN_HALF_LO
    if q >= 0.6875:
        k = 1.0
        c = PI_4
        c_lo = PI_4_LO
    den, den_lo = _fast_two_sum(d, k * n)
    t, t_lo = _dd_div(n - k * d, 0.0, den, den_lo)
    return _atan_sum_f64(c, c_lo, t, t_lo)


@ptxpy.func
def atan2_f64(y: f64, x: f64) -> f64:
    """The angle of (x, y): K + m atan(n/d), n/d = min/max of |x|, |y|, K and m by the quadrant
    and by which is larger; the sign of y. The special values follow from n = 0 (atan 0) and
    d = inf (atan 0, or pi/4 when both are infinite). A NaN y is returned first, then a NaN x."""
    if y != y:
        return y
    if x != x:
        return x
    ax = abs(x)
    ay = abs(y)
    n = min(ax, ay)
    d = max(ax, ay)
    hi: f64 = 0.0
    lo: f64 = 0.0
    if n == math.inf:
        hi = PI_4
        lo = PI_4_LO
    elif n > 0.0 and d < math.inf:
        hi, lo = _atan_ratio_f64(n, d)
    x_negative = ptxpy.bitcast(x, i64) < 0           # -0 counts: atan2(+-0, -0) = +-pi
    big: f64 = 0.0
    big_lo: f64 = 0.0
    m: f64 = -1.0 if x_negative else 1.0
    if ay > ax:                       # pi/2 - atan(x/|y|)
        big = PIO2_HI
        big_lo = PIO2_LO
        m = -m
    elif x_negative:                  # pi - atan(|y/x|)
        big = PI_HI
        big_lo = PI_LO
    s, err = _fast_two_sum(big, m * hi)
    return math.copysign(s + (err + (big_lo + m * lo)), y)


@ptxpy.func
def _asin_reduced_f64(a: f64) -> tuple[f64, f64]:
    """s and tail with asin(s') = s + tail (relative error about 2^-60) for 0 <= a < 1, where
    s' = a below 1/2 and s' = sqrt((1 - a)/2) above (w = (1 - a)/2 is exact there; s + s_lo
    its square root to 2^-100, s_lo by fma; s_lo / sqrt(1 - w) ~ s_lo (1 + w/2))."""
    z = a * a
    s = a
    s_lo: f64 = 0.0
    if a >= 0.5:
        z = 0.5 - 0.5 * a
        s = math.sqrt(z)
        s_lo = ptxpy.fma(-s, s, z) / (s + s)
    return s, ptxpy.fma(s * z, _asin_tail_f64(z), ptxpy.fma(s_lo, 0.5 * z, s_lo))


@ptxpy.func
def _asin_special_f64(x: f64, at_one: f64, at_minus_one: f64) -> f64:
    """asin or acos for |x| >= 1 and NaN: the values at +-1, NaN beyond, a NaN x itself."""
    if x == 1.0:
        return at_one
    if x == -1.0:
        return at_minus_one
    if x != x:
        return x
    return math.nan


@ptxpy.func
def asin_f64(x: f64) -> f64:
    """s + tail below 1/2; pi/2 - 2 (s + tail) above, pi/2 - 2s exactly (it loses at most one
    bit, at 1/2); the sign of x."""
    a = abs(x)
    if not a < 1.0:
        return _asin_special_f64(x, PIO2_HI, -PIO2_HI)
    s, tail = _asin_reduced_f64(a)
    if a < 0.5:
        return math.copysign(s + tail, x)
    hi, err = _fast_two_sum(PIO2_HI, -2.0 * s)
    return math.copysign(hi + (err + (PIO2_LO - 2.0 * tail)), x)


@ptxpy.func
def acos_f64(x: f64) -> f64:
    """pi/2 - asin(x) below 1/2; 2 asin(s) for x above 1/2, pi - 2 asin(s) below -1/2; the sum
    with pi/2 or pi exact, the rest rounded into it."""
    a = abs(x)
    if not a < 1.0:
        return _asin_special_f64(x, 0.0, PI_HI)
    s, tail = _asin_reduced_f64(a)
    big: f64 = PIO2_HI
    big_lo: f64 = PIO2_LO
    m: f64 = -1.0 if x >= 0.0 else 1.0
    if a >= 0.5:
        big = f64(0.0) if x > 0.0 else f64(PI_HI)
        big_lo = f64(0.0) if x > 0.0 else f64(PI_LO)
        m = -2.0 * m
    hi, err = _fast_two_sum(big, m * s)
    return hi + (err + (big_lo + m * tail))


@ptxpy.func
def _atan_sum_f32(c: f32, c_lo: f32, t: f32, t_lo: f32) -> tuple[f32, f32]:
    """_atan_sum_f64 in f32."""
    z = t * t
    tail = ptxpy.fma(t * z, _atan_tail_f32(z), ptxpy.fma(-t_lo, z, t_lo))
    hi, err = _fast_two_sum_f32(c, t)
    return hi, err + (c_lo + tail)


@ptxpy.func
def _df_quotient_f32(num: f32, den: f32, den_lo: f32) -> tuple[f32, f32]:
    """num / (den + den_lo) as hi + lo, lo from the remainder (exact by fma) to about 2^-46."""
    q = num / den
    return q, (ptxpy.fma(-q, den, num) - q * den_lo) / den


@ptxpy.func
def atan_f32(x: f32) -> f32:
    """atan_f64 in f32 arithmetic, t and the constants as pairs of f32."""
    if x != x:
        return x
    a = abs(x)
    k: f32 = 0.0
    c: f32 = 0.0
    c_lo: f32 = 0.0
    if a >= 0.4375:
        k = 0.5
        c = ATAN_HALF_F32
        c_lo = ATAN_HALF_LO_F32
    if a >= 0.6875:
        k = 1.0
        c = PI_4_F32
        c_lo = PI_4_LO_F32
    if a >= 1.1875:
        k = 1.5
        c = ATAN_3_2_F32
        c_lo = ATAN_3_2_LO_F32
    num = a - k
    p = k * a
    den, den_lo = _two_sum_f32(1.0, p)
    den_lo = den_lo + ptxpy.fma(k, a, -p)
    if a >= 2.4375:                   # atan(2^30) rounds to pi/2
        num = -1.0
        den = min(a, 1073741824.0)
        den_lo = 0.0
        c = PIO2_F32
        c_lo = PIO2_LO_F32
    t, t_lo = _df_quotient_f32(num, den, den_lo)
    hi, lo = _atan_sum_f32(c, c_lo, t, t_lo)
    return math.copysign(hi + lo, x)


@ptxpy.func
def _atan_ratio_f32(n: f32, d: f32) -> tuple[f32, f32]:
    """_atan_ratio_f64 in f32: the quotient alone below 2^-20; scaling by 2^-80 above 2^100 and
    by 2^80 below 2^-40 keeps the remainders exact (q >= 2^-20 and d >= 2^-69)."""
    q = n / d
    if q < 9.5367431640625e-07:       # 2^-20
        return q, f32(0.0)
    scale: f32 = 1.0
    if d > 1.2676506002282294e+30:    # 2^100
        scale = 8.271806125530277e-25      # 2^-80
    if d < 9.094947017729282e-13:     # 2^-40
        scale = 1.2089258196146292e+24     # 2^80
    n = n * scale
    d = d * scale
    k: f32 = 0.0
    c: f32 = 0.0
    c_lo: f32 = 0.0
    if q >= 0.4375:
        k = 0.5
        c = ATAN_HALF_F32
        c_lo = ATAN_HALF_LO_F32
    if q >= 0.6875:
        k = 1.0
        c = PI_4_F32
        c_lo = PI_4_LO_F32
    den, den_lo = _fast_two_sum_f32(d, k * n)
    t, t_lo = _df_quotient_f32(n - k * d, den, den_lo)
    return _atan_sum_f32(c, c_lo, t, t_lo)


@ptxpy.func
def atan2_f32(y: f32, x: f32) -> f32:
    """atan2_f64 in f32."""
    if y != y:
        return y
    if x != x:
        return x
    ax = abs(x)
    ay = abs(y)
    n = min(ax, ay)
    d = max(ax, ay)
    hi: f32 = 0.0
    lo: f32 = 0.0
    if n == math.inf:
        hi = PI_4_F32
        lo = PI_4_LO_F32
    elif n > 0.0 and d < math.inf:
        hi, lo = _atan_ratio_f32(n, d)
    x_negative = ptxpy.bitcast(x, i32) < 0
    big: f32 = 0.0
    big_lo: f32 = 0.0
    m: f32 = -1.0 if x_negative else 1.0
    if ay > ax:
        big = PIO2_F32
        big_lo = PIO2_LO_F32
        m = -m
    elif x_negative:
        big = PI_F32
        big_lo = PI_LO_F32
    s, err = _fast_two_sum_f32(big, m * hi)
    return math.copysign(s + (err + (big_lo + m * lo)), y)


@ptxpy.func
def _asin_reduced_f32(a: f32) -> tuple[f32, f32]:
    """_asin_reduced_f64 in f32."""
    z = a * a
    s = a
    s_lo: f32 = 0.0
    if a >= 0.5:
        z = 0.5 - 0.5 * a
        s = math.sqrt(z)
        s_lo = ptxpy.fma(-s, s, z) / (s + s)
    return s, ptxpy.fma(s * z, _asin_tail_f32(z), ptxpy.fma(s_lo, 0.5 * z, s_lo))


@ptxpy.func
def _asin_special_f32(x: f32, at_one: f32, at_minus_one: f32) -> f32:
    if x == 1.0:
        return at_one
    if x == -1.0:
        return at_minus_one
    if x != x:
        return x
    return math.nan


@ptxpy.func
def asin_f32(x: f32) -> f32:
    a = abs(x)
    if not a < 1.0:
        return _asin_special_f32(x, PIO2_F32, -PIO2_F32)
    s, tail = _asin_reduced_f32(a)
    if a < 0.5:
        return math.copysign(s + tail, x)
    hi, err = _fast_two_sum_f32(PIO2_F32, -2.0 * s)
    return math.copysign(hi + (err + (PIO2_LO_F32 - 2.0 * tail)), x)


@ptxpy.func
def acos_f32(x: f32) -> f32:
    a = abs(x)
    if not a < 1.0:
        return _asin_special_f32(x, 0.0, PI_F32)
    s, tail = _asin_reduced_f32(a)
    big: f32 = PIO2_F32
    big_lo: f32 = PIO2_LO_F32
    m: f32 = -1.0 if x >= 0.0 else 1.0
    if a >= 0.5:
        big = f32(0.0) if x > 0.0 else f32(PI_F32)
        big_lo = f32(0.0) if x > 0.0 else f32(PI_LO_F32)
        m = -2.0 * m
    hi, err = _fast_two_sum_f32(big, m * s)
    return hi + (err + (big_lo + m * tail))

# === end of inverse trigonometric functions ======================================================


# === hyperbolic functions, expm1 and log1p: sinh cosh asinh acosh atanh expm1 log1p =============
# expm1, sinh and cosh take e^|x| = 2^k (1 + hi + lo) from the exp reduction and subtract or add
# in double-word arithmetic, so that nothing cancels for small x. log1p, asinh, acosh and atanh
# form the argument of the logarithm as a double-word u + c and take ln(u + c) with the log
# reduction, c carried into it (`_log_pair_f64`, `_log_pair_f32`).
@ptxpy.func
def _exp_dd_f64(k: i32, hi: f64, lo: f64) -> tuple[f64, f64]:
    """2^k (1 + hi + lo) as a double-double, for |k| <= 1022 (hi + lo from `_exp_reduce_f64`)."""
    one, err = _fast_two_sum(1.0, hi)
    scale = _pow2_f64(k)
    return one * scale, (err + lo) * scale


@ptxpy.func
def _dd_recip_f64(hi: f64, lo: f64) -> tuple[f64, f64]:
    """1 / (hi + lo) as q + q_lo: the remainder 1 - q (hi + lo) (its main part exact by fma),
    times q instead of divided by hi + lo (it is below 2^-52, so that costs 2^-104)."""
    q = 1.0 / hi
    return q, (ptxpy.fma(-q, hi, 1.0) - q * lo) * q


@ptxpy.func
def _sqrt_dd_f64(q: f64, q_lo: f64) -> tuple[f64, f64]:
    """sqrt(q + q_lo) = r + r_lo for q > 0, |q_lo| <= ulp(q): r rounded, r_lo the first-order
    correction (q + q_lo - r^2) / (2r) with the remainder exact by fma (relative error 2^-104)."""
    r = math.sqrt(q)
    return r, (ptxpy.fma(-r, r, q) + q_lo) / (r + r)


@ptxpy.func
def _log_pair_f64(u: f64, c: f64, k0: i32) -> f64:
    """ln(u + c) + k0 ln 2, rounded, for normal u > 0 and |c| <= ulp(u).

    As `_log_reduced_f64`: u = 2^k m, f = m - 1 exactly, ln(m + f_lo) = 2 atanh(s) with
    f_lo = c 2^-k, but s = (f + f_lo) / (2 + f + f_lo): f_lo joins the low parts of the
    numerator and the denominator of the double-double s, so an argument near 1 keeps its
    relative precision (to about 2^-104 absolute: enough while ln(u + c) is above 2^-50; the
    callers take smaller results from series). 2^-k is clamped at 2^-1022,
    which is wrong only for u > 2^1022, where f_lo is far below the result's ulp."""
    bits = ptxpy.bitcast(u, u64)
    k = i32(bits >> 52) - 1023
    m = ptxpy.bitcast((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000, f64)    # in [1, 2)
    if m > SQRT2:
        m = m * 0.5
        k = k + 1
    f = m - 1.0
    f_lo = c * _pow2_f64(max(-k, -1022))
    den = 2.0 + f
    den_lo = ((2.0 - den) + f) + f_lo
    s = f / den
    s_lo = (ptxpy.fma(-s, den, f) + (f_lo - s * den_lo)) / (den + den_lo)
    sq = s * s
    sq_lo = ptxpy.fma(s, s, -sq)
    cube = sq * s
    cube_lo = ptxpy.fma(sq, s, -cube) + (sq_lo * s + 3.0 * sq * s_lo)
    third = TWO_THIRDS_HI * cube
    third_lo = ptxpy.fma(TWO_THIRDS_HI, cube, -third) + (TWO_THIRDS_HI * cube_lo + TWO_THIRDS_LO * cube)
    rest = cube * sq * _log_tail_f64(sq)
    hi, lo = _fast_two_sum(2.0 * s, third)
    kf = f64(k + k0)
    big, err = _two_sum(kf * LN2_HI42, hi)
    return big + (err + ((lo + (2.0 * s_lo + third_lo + rest)) + kf * LN2_LO42))


@ptxpy.func
def expm1_f64(x: f64) -> f64:
    """e^x - 1 = 2^k (1 + hi + lo) - 1. For k = 0 (|x| <= ln(2)/2) that is `_expm1_reduced_f64`'s
    hi + lo itself (x + x^2/2 exact, error near 2^-58); otherwise 2^k (1 + hi + lo) as a
    double-double minus 1 with the exact error of the subtraction (the result is at least 0.29
    and 2^k (1 + hi + lo) at most 3.5 times it, so the 2^-58 relative error stays far below an
    ulp). -1 below -38 (e^x < 2^-54), e^x above k = 60 (1 is below 2^-60 of it; overflow as exp)."""
    if not abs(x) >= 5.551115123125783e-17:     # 2^-54 (and NaN): x + x^2/2 rounds to x
        return x
    if x < -38.0:
        return -1.0
    k, hi, lo = _exp_reduce_f64(min(x, 710.0), 0.0)
    if k == 0:
        return hi
    if k > 60:
        return _exp_finish_f64(k, hi, lo)
    e_hi, e_lo = _exp_dd_f64(k, hi, lo)
    s, s_err = _two_sum(e_hi, -1.0)
    return s + (s_err + e_lo)


@ptxpy.func
def sinh_f64(x: f64) -> f64:
    """(E - 1/E)/2 with E = e^|x| as a double-double and 1/E to 2^-104, the difference with its
    exact error: E - 1/E cancels for small x but both are known to about 2^-104 absolute, beside
    E's own relative error near 2^-58 (which gives sinh's). Above k = 34 (|x| > 23.9, 1/E below
    2^-69 of E) 2^(k-1) (1 + hi + lo), scaled as exp so that it overflows exactly where sinh
    does (|x| > ln(2 MAX) = 710.4758600739439)."""
    a = abs(x)
    if not (a >= 1.4901161193847656e-08 and a < math.inf):   # 2^-26: x + x^3/6 rounds to x
        return x                                             # (also +-0, NaN, +-inf)
    k, hi, lo = _exp_reduce_f64(min(a, 711.0), 0.0)
    if k > 34:
        return math.copysign(_exp_finish_f64(k - 1, hi, lo), x)
    e_hi, e_lo = _exp_dd_f64(k, hi, lo)
    i_hi, i_lo = _dd_recip_f64(e_hi, e_lo)
    s, s_err = _fast_two_sum(e_hi, -i_hi)
    return math.copysign(0.5 * (s + (s_err + (e_lo - i_lo))), x)


@ptxpy.func
def cosh_f64(x: f64) -> f64:
    """(E + 1/E)/2 as sinh_f64 (no cancellation here); 2^(k-1) (1 + hi + lo) above k = 34."""
    if x != x:
        return x
    k, hi, lo = _exp_reduce_f64(min(abs(x), 711.0), 0.0)
    if k > 34:
        return _exp_finish_f64(k - 1, hi, lo)
    e_hi, e_lo = _exp_dd_f64(k, hi, lo)
    i_hi, i_lo = _dd_recip_f64(e_hi, e_lo)
    s, s_err = _fast_two_sum(e_hi, i_hi)
    return 0.5 * (s + (s_err + (e_lo + i_lo)))


@ptxpy.func
def log1p_f64(x: f64) -> f64:
    """x - x^2/2 + x^3/3 below 2^-18 (the next term is below 2^-56 of x; also +-0 and
    subnormals); above, ln(u + c) with u + c = 1 + x exactly (`_two_sum`): the rounding error of
    1 + x is kept. (Below 2^-18 the pair would work too, but where u + c is within 2^-52 of 1
    the rounding of its low parts reaches 1/4 ulp.)"""
    if not (x > -1.0 and x < math.inf):
        if x == -1.0:
            return -math.inf
        return math.nan if x < -1.0 else x
    if abs(x) < 3.814697265625e-06:
        return ptxpy.fma(x * x, ptxpy.fma(x, 0.3333333333333333, -0.5), x)
    u, c = _two_sum(1.0, x)
    return _log_pair_f64(u, c, 0)


@ptxpy.func
def asinh_f64(x: f64) -> f64:
    """ln(|x| + sqrt(x^2 + 1)) with the sign of x, the argument of the log as a double-double
    (x^2 exact by fma, the square root with its correction, relative error 2^-104), so that it
    loses nothing near 1 + |x| for small x. ln(2|x|) above 2^28 (the rest, 1/(4x^2), is below
    2^-58)."""
    a = abs(x)
    if not (a >= 1.4901161193847656e-08 and a < math.inf):   # 2^-26: x - x^3/6 rounds to x
        return x
    u = a
    c: f64 = 0.0
    k0 = 1
    if a <= 268435456.0:
        sq = a * a
        q, q_err = _two_sum(sq, 1.0)
        r, r_lo = _sqrt_dd_f64(q, q_err + ptxpy.fma(a, a, -sq))
        u, w_err = _fast_two_sum(r, a)
        c = w_err + r_lo
        k0 = 0
    return math.copysign(_log_pair_f64(u, c, k0), x)


@ptxpy.func
def acosh_f64(x: f64) -> f64:
    """ln(x + sqrt(x^2 - 1)) as asinh_f64: x^2 - 1 exactly as a double-double (x^2 by fma, the
    subtraction by `_two_sum`), so that the square root near x = 1 keeps its precision; ln(2x)
    above 2^28."""
    if not (x > 1.0 and x < math.inf):
        if x == 1.0:
            return 0.0
        return math.nan if x < 1.0 else x
    u = x
    c: f64 = 0.0
    k0 = 1
    if x <= 268435456.0:
        sq = x * x
        q, q_err = _two_sum(sq, -1.0)
        r, r_lo = _sqrt_dd_f64(q, q_err + ptxpy.fma(x, x, -sq))
        u, w_err = _fast_two_sum(x, r)
        c = w_err + r_lo
        k0 = 0
    return _log_pair_f64(u, c, k0)


@ptxpy.func
def atanh_f64(x: f64) -> f64:
    """ln((1 + |x|) / (1 - |x|)) / 2 with the sign of x: 1 + |x| and 1 - |x| with their exact
    errors, divided in double-double (`_dd_div`), the log of that pair."""
    a = abs(x)
    if not (a >= 7.450580596923828e-09 and a < 1.0):   # 2^-27: x + x^3/3 rounds to x
        if a == 1.0:
            return math.copysign(math.inf, x)
        return math.nan if a > 1.0 else x
    num, num_lo = _fast_two_sum(1.0, a)
    den, den_lo = _fast_two_sum(1.0, -a)
    u, c = _dd_div(num, num_lo, den, den_lo)
    return math.copysign(0.5 * _log_pair_f64(u, c, 0), x)


# f32: the same in f32 arithmetic with double-f32 pairs.
@ptxpy.func
def _exp_tail_f32(r: f32) -> f32:
    """(e^r - 1 - r - r^2/2) / r^3 for |r| <= ln(2)/2: degree 4, relative error 2^-23.6."""
    p = f32(0.00019882698)
    p = ptxpy.fma(p, r, 0.0013926184)
    p = ptxpy.fma(p, r, 0.008333321)
    p = ptxpy.fma(p, r, 0.041666556)
    p = ptxpy.fma(p, r, 0.16666667)
    return p


@ptxpy.func
def _expm1_reduced_f32(r: f32, r_lo: f32) -> tuple[f32, f32]:
    """e^(r + r_lo) - 1 = hi + lo for |r| <= ln(2)/2 (+ 10^-5) and |r_lo| <= 2^-21, relative
    error about 2^-27.5, as `_expm1_reduced_f64`: r + r^2/2 exactly (r^2 by fma), the cubic
    and higher terms (at most 0.02 r, relative error 2^-22 with their roundings) by
    `_exp_tail_f32`; r_lo to first order, r_lo e^r ~ r_lo (1 + r + r^2/2). The pair is
    renormalized (|lo| <= ulp(hi)/2)."""
    sq = r * r
    hi, err = _fast_two_sum_f32(r, 0.5 * sq)
    tail = r * sq * _exp_tail_f32(r)
    lo = err + (ptxpy.fma(0.5, ptxpy.fma(r, r, -sq), tail) + ptxpy.fma(r_lo, hi, r_lo))
    return _fast_two_sum_f32(hi, lo)       # lo below ulp(hi), as the reciprocal in sinh needs


@ptxpy.func
def _expm1_parts_f32(x: f32) -> tuple[i32, f32, f32]:
    """k and hi + lo with e^x = 2^k (1 + hi + lo), for |x| <= 110 (as `_exp_parts_f32`)."""
    k = ptxpy._rint(x * INV_LN2_F32)
    hi, lo = _expm1_reduced_f32(ptxpy.fma(-k, LN2_F32, x), -k * LN2_LO_F32)
    return i32(k), hi, lo


@ptxpy.func
def _df_recip_f32(hi: f32, lo: f32) -> tuple[f32, f32]:
    """1 / (hi + lo) as q + q_lo, to about 2^-47 (as `_dd_recip_f64`)."""
    q = 1.0 / hi
    return q, (ptxpy.fma(-q, hi, 1.0) - q * lo) * q


@ptxpy.func
def _sqrt_df_f32(q: f32, q_lo: f32) -> tuple[f32, f32]:
    """sqrt(q + q_lo) = r + r_lo for q > 0 (as `_sqrt_dd_f64`)."""
    r = math.sqrt(q)
    return r, (ptxpy.fma(-r, r, q) + q_lo) / (r + r)


@ptxpy.func
def _log_pair_f32(u: f32, c: f32, k0: i32) -> f32:
    """ln(u + c) + k0 ln 2, rounded, for normal u > 0 and |c| <= ulp(u), where the result is
    above 2^-13 in magnitude (the callers take smaller ones from their series).

    u = 2^k (1 + f) and ln(1 + f) as in `_log_reduced_f32`; c adds ln(1 + t) ~ t with
    t = c 2^-k / (1 + f) = c 2^-k (1 - s)^2 (1 + s^2) (1 + f = (1 + s) / (1 - s); off by s^4 <
    2^-10 of t, and t^2/2 < 2^-48 is left out: far below an ulp of a result above 2^-13).
    2^-k is clamped at 2^-126: wrong only for u > 2^126, where t is negligible."""
    bits = ptxpy.bitcast(u, u32)
    k = i32(bits >> 23) - 127
    m = ptxpy.bitcast((bits & 0x007FFFFF) | 0x3F800000, f32)          # in [1, 2)
    if m > SQRT2_F32:
        m = m * 0.5
        k = k + 1
    f = m - 1.0
    s = f / (2.0 + f)
    sq = f * f
    half_sq = 0.5 * sq
    half_sq_lo = 0.5 * ptxpy.fma(f, f, -sq)
    hi, err = _fast_two_sum_f32(f, -half_sq)
    z = s * s
    correction = s * ptxpy.fma(z, _log_quadratic_f32(z), half_sq)
    w = 1.0 - s
    t = c * _pow2_f32(max(-k, -126)) * (w * w) * (1.0 + z)
    kf = f32(k + k0)
    big, e = _two_sum_f32(kf * LN2_HI16, hi)
    return big + (e + ((err + ((correction - half_sq_lo) + t)) + kf * LN2_LO16))


@ptxpy.func
def expm1_f32(x: f32) -> f32:
    """As expm1_f64: hi + lo for k = 0, 2^k (1 + hi + lo) as a double-f32 minus 1 with the exact
    error up to k = 30, e^x above; -1 below -18 (e^x < 2^-25)."""
    if not abs(x) >= 2.9802322387695312e-08:    # 2^-25 (and NaN): x + x^2/2 rounds to x
        return x
    if x < -18.0:
        return -1.0
    k, hi, lo = _expm1_parts_f32(min(x, 89.0))
    if k == 0:
        return hi + lo
    one, err = _fast_two_sum_f32(1.0, hi)
    if k > 30:
        return _scale_f32(one + (err + lo), k)
    scale = _pow2_f32(k)
    s, s_err = _two_sum_f32(one * scale, -1.0)
    return s + (s_err + (err + lo) * scale)


@ptxpy.func
def sinh_f32(x: f32) -> f32:
    """As sinh_f64: (E - 1/E)/2 in double-f32, 2^(k-1) (1 + hi + lo) above k = 16 (1/E below
    2^-33 of E), overflowing exactly above ln(2 MAX) = 89.41598629223294."""
    a = abs(x)
    if not (a >= 0.000244140625 and a < math.inf):      # 2^-12: x + x^3/6 rounds to x
        return x
    k, hi, lo = _expm1_parts_f32(min(a, 90.0))
    one, err = _fast_two_sum_f32(1.0, hi)
    if k > 16:
        return math.copysign(_scale_f32(one + (err + lo), k - 1), x)
    scale = _pow2_f32(k)
    e_hi = one * scale
    e_lo = (err + lo) * scale
    i_hi, i_lo = _df_recip_f32(e_hi, e_lo)
    s, s_err = _fast_two_sum_f32(e_hi, -i_hi)
    return math.copysign(0.5 * (s + (s_err + (e_lo - i_lo))), x)


@ptxpy.func
def cosh_f32(x: f32) -> f32:
    """As cosh_f64: (E + 1/E)/2 in double-f32, 2^(k-1) (1 + hi + lo) above k = 16."""
    if x != x:
        return x
    k, hi, lo = _expm1_parts_f32(min(abs(x), 90.0))
    one, err = _fast_two_sum_f32(1.0, hi)
    if k > 16:
        return _scale_f32(one + (err + lo), k - 1)
    scale = _pow2_f32(k)
    e_hi = one * scale
    e_lo = (err + lo) * scale
    i_hi, i_lo = _df_recip_f32(e_hi, e_lo)
    s, s_err = _fast_two_sum_f32(e_hi, i_hi)
    return 0.5 * (s + (s_err + (e_lo + i_lo)))


@ptxpy.func
def log1p_f32(x: f32) -> f32:
    """x - x^2/2 + x^3/3 below 2^-12 (the next term is below 2^-38 of x); above, ln(u + c)
    with u + c = 1 + x exactly."""
    if not (x > -1.0 and x < math.inf):
        if x == -1.0:
            return -math.inf
        return math.nan if x < -1.0 else x
    if abs(x) < 0.000244140625:
        return ptxpy.fma(x * x, ptxpy.fma(x, 0.33333334, -0.5), x)
    u, c = _two_sum_f32(1.0, x)
    return _log_pair_f32(u, c, 0)


@ptxpy.func
def asinh_f32(x: f32) -> f32:
    """As asinh_f64 in double-f32; ln(2|x|) above 2^12 (1/(4x^2) < 2^-26)."""
    a = abs(x)
    if not (a >= 0.000244140625 and a < math.inf):      # 2^-12: x - x^3/6 rounds to x
        return x
    u = a
    c: f32 = 0.0
    k0 = 1
    if a <= 4096.0:
        sq = a * a
        q, q_err = _two_sum_f32(sq, 1.0)
        r, r_lo = _sqrt_df_f32(q, q_err + ptxpy.fma(a, a, -sq))
        u, w_err = _fast_two_sum_f32(r, a)
        c = w_err + r_lo
        k0 = 0
    return math.copysign(_log_pair_f32(u, c, k0), x)


@ptxpy.func
def acosh_f32(x: f32) -> f32:
    """As acosh_f64 in double-f32; ln(2x) above 2^12."""
    if not (x > 1.0 and x < math.inf):
        if x == 1.0:
            return 0.0
        return math.nan if x < 1.0 else x
    u = x
    c: f32 = 0.0
    k0 = 1
    if x <= 4096.0:
        sq = x * x
        q, q_err = _two_sum_f32(sq, -1.0)
        r, r_lo = _sqrt_df_f32(q, q_err + ptxpy.fma(x, x, -sq))
        u, w_err = _fast_two_sum_f32(x, r)
        c = w_err + r_lo
        k0 = 0
    return _log_pair_f32(u, c, k0)


@ptxpy.func
def atanh_f32(x: f32) -> f32:
    """As atanh_f64: (1 + |x|) / (1 - |x|) as a double-f32 quotient (remainder exact by fma)."""
    a = abs(x)
    if not (a >= 0.000244140625 and a < 1.0):           # 2^-12: x + x^3/3 rounds to x
        if a == 1.0:
            return math.copysign(math.inf, x)
        return math.nan if a > 1.0 else x
    num, num_lo = _fast_two_sum_f32(1.0, a)
    den, den_lo = _fast_two_sum_f32(1.0, -a)
    u = num / den
    c = (ptxpy.fma(-u, den, num) + (num_lo - u * den_lo)) / den
    return math.copysign(0.5 * _log_pair_f32(u, c, 0), x)

# === end of hyperbolic functions =================================================================


# === hypot, cbrt and erfc =========================================================================
# hypot: the squares of |x| and |y| (scaled by a power of two where the larger is huge or tiny)
# summed exactly as a double-word number s + e (products by fma), and sqrt(s + e) = r + (s - r^2
# + e) / (2r) for r = sqrt(s) correctly rounded (s - r^2 is exact by fma): relative error about
# 2^-100 (f64) / 2^-46 (f32) before the one final rounding (a subnormal result is rounded once
# too; f32 below 2^-50 goes through f64).
# cbrt: |x| = 2^(3q) m 2^i with m in [1, 2), i in {0, 1, 2}; y = P(m) 2^(i/3) to 2^-10 (f32) /
# 2^-22 (f64), then one Halley step y - y d / (2y^3 + m 2^i), d = y^3 - m 2^i exact to 2^-46
# (f32) / 2^-104 (f64): relative error (2/3) 2^-30 / 2^-66, and exact cubes come out exact.
# erfc: 1 - x - x P(x^2) (erf's polynomial, 1 - x as an exact pair) below 15/32, where erfc > 1/2;
# above, erfc(a) = e^(-a^2) G(1/a) / a, G(t) = a erfc(a) e^(a^2) by polynomials in 1/a (G varies
# little, 0.31 to 0.56) with their two leading coefficients in double-word arithmetic, 1/a and
# a^2 as exact pairs: relative error about 2^-56 (f64) / 2^-28 (f32) before the one rounding
# (`_scale_pair_*`: once also into the subnormals); erfc(-a) = 2 - erfc(a).
HYPOT_HUGE = 3.273390607896142e+150       # 2^500: above, the squares could overflow
HYPOT_TINY = 3.4395525670743494e-136      # 2^-450: below, their error terms could be subnormal
TWO_M600 = 2.409919865102884e-181         # 2^-600
TWO_600 = 4.149515568880993e+180
HALF_SUBNORMAL_600 = 1.0250665447337477e-143  # 2^-475: half the subnormals' spacing, times 2^600
CBRT2 = 1.2599210498948732                # 2^(1/3)
CBRT4 = 1.5874010519681996                # 2^(2/3)
ERFC_NEAR = 0.46875                       # 15/32: erfc(x) > 1/2 below, where 1 - erf(x) is used
ERFC_IS_ZERO = 27.3                       # erfc(x) < 2^-1075 above (from 27.23): it rounds to +0
HYPOT_HUGE_F32 = 1.152921504606847e+18    # 2^60
HYPOT_TINY_F32 = 8.881784197001252e-16    # 2^-50
TWO_M90_F32 = 8.077935669463161e-28       # 2^-90
TWO_90_F32 = 1.2379400392853803e+27
CBRT2_F32 = 1.2599210739135742
CBRT4_F32 = 1.587401032447815
TWO_24 = 16777216.0
ERFC_IS_ZERO_F32 = 10.1                   # erfc(x) < 2^-150 above (from 10.06)


@ptxpy.func
def _dd_step_f64(p: f64, w: f64, w_lo: f64, c: f64, c_lo: f64) -> tuple[f64, f64]:
    """A Horner step in double-word arithmetic: c + c_lo + (w + w_lo) p as hi + lo, for
    |w p| <= |c|, with w p split exactly by fma. (A low part p_lo of p joins c_lo as w p_lo.)"""
    m = w * p
    hi, err = _fast_two_sum(c, m)
    return hi, err + ((ptxpy.fma(w, p, -m) + w_lo * p) + c_lo)


@ptxpy.func
def _erfc_near_f64(w: f64, w_lo: f64) -> tuple[f64, f64]:
    """a erfc(a) e^(a^2) for 15/32 <= a <= 2, in w + w_lo = 1/a - 1.25, as hi + lo: degree 30,
    relative error 2^-57.7; the two leading coefficients are pairs."""
    p = f64(7.263581235634535e-08)
    p = ptxpy.fma(p, w, -2.2646986328542207e-07)
    p = ptxpy.fma(p, w, 3.0127173284860675e-08)
    p = ptxpy.fma(p, w, 6.054490067461143e-07)
    p = ptxpy.fma(p, w, -6.303816896488846e-07)
    p = ptxpy.fma(p, w, -9.915078530155055e-08)
    p = ptxpy.fma(p, w, -2.829751527270964e-08)
    p = ptxpy.fma(p, w, 1.173519776935882e-06)
    p = ptxpy.fma(p, w, -1.6645877899269143e-06)
    p = ptxpy.fma(p, w, 1.2495319830185396e-06)
    p = ptxpy.fma(p, w, -7.861595178349403e-07)
    p = ptxpy.fma(p, w, -2.030224462825601e-07)
    p = ptxpy.fma(p, w, 3.1393465240812694e-06)
    p = ptxpy.fma(p, w, -9.242812873200706e-06)
    p = ptxpy.fma(p, w, 1.9826447684881028e-05)
    p = ptxpy.fma(p, w, -3.632883444978973e-05)
    p = ptxpy.fma(p, w, 5.901782831380867e-05)
    p = ptxpy.fma(p, w, -8.439236415636744e-05)
    p = ptxpy.fma(p, w, 0.00010044944363569204)
    p = ptxpy.fma(p, w, -7.848775170990952e-05)
    p = ptxpy.fma(p, w, -3.922579234376545e-05)
    p = ptxpy.fma(p, w, 0.0003541389850059543)
    p = ptxpy.fma(p, w, -0.0010192033000072532)
    p = ptxpy.fma(p, w, 0.0022110471397986118)
    p = ptxpy.fma(p, w, -0.003991666997466933)
    p = ptxpy.fma(p, w, 0.005881647800367315)
    p = ptxpy.fma(p, w, -0.0057456455786361)
    p = ptxpy.fma(p, w, -0.0028695863393700437)
    p = ptxpy.fma(p, w, 0.03673952077974265)
    hi, lo = _dd_step_f64(p, w, w_lo, -0.13596544624146656, -7.189704564683682e-18)
    return _dd_step_f64(hi, w, w_lo, 0.39128047137849176, ptxpy.fma(w, lo, 2.1880732257800506e-17))


@ptxpy.func
def _erfc_far_f64(w: f64, w_lo: f64) -> tuple[f64, f64]:
    """a erfc(a) e^(a^2) for 2 <= a <= 27.3, in w + w_lo = 1/a - 0.27, as hi + lo: degree 23,
    relative error 2^-57.9; the two leading coefficients are pairs."""
    p = f64(4893.093309100921)
    p = ptxpy.fma(p, w, -1662.553768647302)
    p = ptxpy.fma(p, w, -1410.0641597015901)
    p = ptxpy.fma(p, w, 898.50099908337)
    p = ptxpy.fma(p, w, -127.53106819259325)
    p = ptxpy.fma(p, w, -74.3355829006554)
    p = ptxpy.fma(p, w, 81.85284114694896)
    p = ptxpy.fma(p, w, -46.6407448224124)
    p = ptxpy.fma(p, w, 11.387392683879527)
    p = ptxpy.fma(p, w, 6.179567023236549)
    p = ptxpy.fma(p, w, -8.540456043441017)
    p = ptxpy.fma(p, w, 4.563772918550981)
    p = ptxpy.fma(p, w, -0.5456036228680717)
    p = ptxpy.fma(p, w, -1.2812849361569845)
    p = ptxpy.fma(p, w, 1.2435995010162344)
    p = ptxpy.fma(p, w, -0.4623475981057277)
    p = ptxpy.fma(p, w, -0.19096998726372685)
    p = ptxpy.fma(p, w, 0.3904210731424967)
    p = ptxpy.fma(p, w, -0.2245421744582466)
    p = ptxpy.fma(p, w, -0.052930751692353416)
    p = ptxpy.fma(p, w, 0.2162401586725535)
    p = ptxpy.fma(p, w, -0.15470365879808237)
    hi, lo = _dd_step_f64(p, w, w_lo, -0.12589607303564238, -5.3162991268545895e-18)
    return _dd_step_f64(hi, w, w_lo, 0.5455435281494877, ptxpy.fma(w, lo, 3.147384822901333e-17))


@ptxpy.func
def _cbrt_f64(w: f64) -> f64:
    """cbrt(m) for 1 <= m <= 2, in w = m - 1.5: degree 6, relative error 2^-21.9."""
    p = f64(-0.002703333870412061)
    p = ptxpy.fma(p, w, 0.005166699418206393)
    p = ptxpy.fma(p, w, -0.009260767947361154)
    p = ptxpy.fma(p, w, 0.020857149295410677)
    p = ptxpy.fma(p, w, -0.05653050145458267)
    p = ptxpy.fma(p, w, 0.2543834538641129)
    p = ptxpy.fma(p, w, 1.1447142425533319)
    return p


@ptxpy.func
def _hypot_special_f64(x: f64, y: f64) -> f64:
    """hypot with an infinite or NaN argument, or two zeros: inf even beside a NaN (C99), else
    the NaN itself."""
    if math.isinf(x) or math.isinf(y):
        return math.inf
    if x != x:
        return x
    if y != y:
        return y
    return 0.0


@ptxpy.func
def hypot_f64(x: f64, y: f64) -> f64:
    """sqrt(x^2 + y^2). Between 2^-450 and 2^500 the squares neither overflow nor lose their
    error terms to the subnormals; outside, both arguments are scaled by 2^-+600 (exactly, or
    a smaller one loses only what cannot reach the result). A subnormal result is rounded from
    r + correction at once: r * 2^-600 rounded, then moved by one step where the exact rest
    beside the correction passes half a step (rounding r + correction first could land on a
    half-way point: 0.75 ulp)."""
    ax = abs(x)
    ay = abs(y)
    big = max(ax, ay)
    if not (ax < math.inf and ay < math.inf and big > 0.0):
        return _hypot_special_f64(x, y)
    small = min(ax, ay)
    scale = f64(1.0)
    unscale = f64(1.0)
    if big > HYPOT_HUGE:
        scale = TWO_M600
        unscale = TWO_600
    elif big < HYPOT_TINY:
        scale = TWO_600
        unscale = TWO_M600
    a = big * scale
    b = small * scale
    aa = a * a
    bb = b * b
    s, err = _fast_two_sum(aa, bb)
    lo = err + (ptxpy.fma(a, a, -aa) + ptxpy.fma(b, b, -bb))
    r = math.sqrt(s)
    correction = (ptxpy.fma(-r, r, s) + lo) / (r + r)
    v = r * unscale
    if v <= SMALLEST_NORMAL:        # a subnormal result: r + correction to its grid, rounded once
        rest = (r - v * TWO_600) + correction
        if rest > HALF_SUBNORMAL_600:
            v += 5e-324
        elif rest < -HALF_SUBNORMAL_600:
            v -= 5e-324
        return v
    return (r + correction) * unscale


@ptxpy.func
def cbrt_f64(x: f64) -> f64:
    """|x| = 2^(3q + i) m (subnormals first scaled by 2^54); P(m) 2^(i/3) to 2^-21.9, one Halley
    step (error (2/3) 2^-65.7); d = y^3 - m 2^i with y^2 and y^3 split exactly by fma, and their
    difference exact (Sterbenz)."""
    a = abs(x)
    if not (a > 0.0 and a < math.inf):          # +-0, +-inf, NaN: the argument itself
        return x
    scaled = a
    n = 54
    if a < SMALLEST_NORMAL:
        scaled = a * TWO_54
        n = 0
    bits = ptxpy.bitcast(scaled, u64)
    n = n + i32(bits >> 52)                     # exponent + 1077, in [3, 2100]
    q = (n * 43691) >> 17                       # n // 3 (exact below 2^15)
    i = n - 3 * q
    m = ptxpy.bitcast((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000, f64)
    target = m * f64(1 << i)                    # m 2^i in [1, 8), exact
    y = _cbrt_f64(m - 1.5) * (CBRT4 if i == 2 else (CBRT2 if i == 1 else 1.0))
    sq = y * y
    cube = sq * y
    cube_lo = ptxpy.fma(sq, y, -cube) + ptxpy.fma(y, y, -sq) * y
    d = (cube - target) + cube_lo
    y = y - y * d / (cube + cube + target)
    return math.copysign(y * _pow2_f64(q - 359), x)


@ptxpy.func
def _scale_pair_f64(hi: f64, lo: f64, k: i32) -> f64:
    """(hi + lo) 2^k rounded once for hi in [2^-7, 2], |lo| < |hi| and -1080 <= k <= 0, also
    where it is subnormal: there the pair, renormalized, times 2^(k + 1074) (exact) is rounded
    to an integer n (rint of the high part, then the exact rest beside the low part decides) and
    n 2^-1074 is the result. _scale_f64(hi + lo, k) would round twice, 0.75 ulp off where hi + lo
    lands on a half-way point of the subnormals."""
    v = _scale_f64(hi + lo, k)
    if v > SMALLEST_NORMAL:
        return v
    units = _pow2_f64(k + 1074)
    top, low = _fast_two_sum(hi, lo)
    h = top * units
    n = ptxpy._rint(h)
    rest = (h - n) + low * units
    if rest > 0.5:
        n += 1.0
    elif rest < -0.5:
        n -= 1.0
    return n * 5e-324


@ptxpy.func
def _erfc_big_f64(a: f64) -> tuple[i32, f64, f64]:
    """k and hi + lo with erfc(a) = 2^k (hi + lo) for 15/32 <= a < 27.3, relative error about
    2^-56: the polynomial's 2^-57.7 and its rounding (2^-53 of a term below 0.06 of the value);
    1/a = t + t_lo (t_lo = t (1 - a t), the remainder exact by fma), e^(-a^2) = 2^k (1 + h + l)
    with a^2 exact, and the products with exact error terms."""
    t = 1.0 / a
    t_lo = t * ptxpy.fma(-t, a, 1.0)
    g: f64 = 0.0
    g_lo: f64 = 0.0
    if a < 2.0:
        g, g_lo = _erfc_near_f64(t - 1.25, t_lo)           # t - 1.25 is exact
    else:
        w, w_err = _two_sum(t, -0.27)
        g, g_lo = _erfc_far_f64(w, w_err + t_lo)
    v = t * g
    v_lo = ptxpy.fma(t, g, -v) + (t * g_lo + t_lo * g)
    sq = a * a
    k, h, l = _exp_reduce_f64(-sq, -ptxpy.fma(a, a, -sq))
    m = v * h
    hi, err = _fast_two_sum(v, m)
    return k, hi, err + (ptxpy.fma(v, h, -m) + v * l + v_lo * (1.0 + h))


@ptxpy.func
def erfc_f64(x: f64) -> f64:
    """1 - erf(x): 1 - x - x P(x^2) below 15/32 (the result is above 1/2, so P's absolute error
    2^-55.8 costs at most 0.07 ulp); 2^k (hi + lo) rounded once above, or 2 - 2^k (hi + lo)
    for negative x; 0 from 27.3 and 2 from -5.93."""
    if x != x:
        return x
    a = abs(x)
    if a < ERFC_NEAR:
        s, err = _two_sum(1.0, -x)
        return s + ptxpy.fma(-x, _erf_small_f64(x * x), err)
    if x >= ERFC_IS_ZERO:
        return 0.0
    if x <= -ERF_IS_ONE:
        return 2.0
    k, hi, lo = _erfc_big_f64(a)
    if x > 0.0:
        return _scale_pair_f64(hi, lo, k)
    scale = _pow2_f64(k)
    s, err = _fast_two_sum(2.0, -hi * scale)
    return s + (err - lo * scale)


@ptxpy.func
def _dd_step_f32(p: f32, w: f32, w_lo: f32, c: f32, c_lo: f32) -> tuple[f32, f32]:
    """_dd_step_f64 in f32."""
    m = w * p
    hi, err = _fast_two_sum_f32(c, m)
    return hi, err + ((ptxpy.fma(w, p, -m) + w_lo * p) + c_lo)


@ptxpy.func
def _erfc_near_f32(w: f32, w_lo: f32) -> tuple[f32, f32]:
    """a erfc(a) e^(a^2) for 15/32 <= a <= 2, in w + w_lo = 1/a - 1.25, as hi + lo: degree 15,
    relative error 2^-30.6; the two leading coefficients are pairs."""
    p = f32(-3.522562e-05)
    p = ptxpy.fma(p, w, 9.920099e-05)
    p = ptxpy.fma(p, w, -0.00010340141)
    p = ptxpy.fma(p, w, 7.038807e-05)
    p = ptxpy.fma(p, w, -6.1385006e-05)
    p = ptxpy.fma(p, w, -2.8044436e-05)
    p = ptxpy.fma(p, w, 0.00034771193)
    p = ptxpy.fma(p, w, -0.00102137)
    p = ptxpy.fma(p, w, 0.0022121747)
    p = ptxpy.fma(p, w, -0.0039914623)
    p = ptxpy.fma(p, w, 0.0058815647)
    p = ptxpy.fma(p, w, -0.005745653)
    p = ptxpy.fma(p, w, -0.0028695846)
    p = ptxpy.fma(p, w, 0.03673952)
    hi, lo = _dd_step_f32(p, w, w_lo, -0.13596545, 5.356701e-09)
    return _dd_step_f32(hi, w, w_lo, 0.39128047, ptxpy.fma(w, lo, -9.001032e-10))


@ptxpy.func
def _erfc_far_f32(w: f32, w_lo: f32) -> tuple[f32, f32]:
    """a erfc(a) e^(a^2) for 2 <= a <= 10.1, in w + w_lo = 1/a - 0.296875, as hi + lo: degree 9,
    relative error 2^-28.9; the two leading coefficients are pairs."""
    p = f32(0.88674146)
    p = ptxpy.fma(p, w, -0.2952299)
    p = ptxpy.fma(p, w, -0.25992367)
    p = ptxpy.fma(p, w, 0.3492348)
    p = ptxpy.fma(p, w, -0.16493025)
    p = ptxpy.fma(p, w, -0.07903575)
    p = ptxpy.fma(p, w, 0.20907615)
    p = ptxpy.fma(p, w, -0.13753925)
    hi, lo = _dd_step_f32(p, w, w_lo, -0.1337475, -6.1445733e-09)
    return _dd_step_f32(hi, w, w_lo, 0.5420525, ptxpy.fma(w, lo, -6.55027e-09))


@ptxpy.func
def _exp_pair_f32(r: f32, r_lo: f32) -> tuple[f32, f32]:
    """e^(r + r_lo) = hi + lo for |r| <= ln(2)/2 (+ 2^-18) and |r_lo| <= 2^-24, to about 2^-30:
    1 + r + r^2/2 as an exact pair (r^2 by fma), the cubic and higher terms (below 0.007) by
    the polynomial, r_lo to first order. (_exp_reduced_f32 rounds r^2 (e^r - 1 - r) / r^2, up
    to 0.06, as one f32: about 2^-28.)"""
    one, err = _fast_two_sum_f32(1.0, r)
    sq = r * r
    hi, err2 = _fast_two_sum_f32(one, 0.5 * sq)
    tail = ptxpy.fma(r * sq, _exp_tail_f32(r),
                     ptxpy.fma(0.5, ptxpy.fma(r, r, -sq), r_lo * ptxpy.fma(0.5, sq, one)))
    return hi, (err + err2) + tail


@ptxpy.func
def _cbrt_f32(w: f32) -> f32:
    """cbrt(m) for 1 <= m <= 2, in w = m - 1.5: degree 2, relative error 2^-10.1."""
    p = f32(-0.05836172)
    p = ptxpy.fma(p, w, 0.25847542)
    p = ptxpy.fma(p, w, 1.1447142)
    return p


@ptxpy.func
def _hypot_special_f32(x: f32, y: f32) -> f32:
    if math.isinf(x) or math.isinf(y):
        return math.inf
    if x != x:
        return x
    if y != y:
        return y
    return 0.0


@ptxpy.func
def hypot_f32(x: f32, y: f32) -> f32:
    """hypot_f64 in f32, scaled by 2^-90 above 2^60. Below 2^-50 (rare) in f64, where the
    squares and, for subnormal x and y (integers X, Y times 2^-149), X^2 + Y^2 are exact: the
    square root then rounds correctly to the subnormal grid (sqrt(X^2 + Y^2) is never within
    2^-26.5 of a half-integer, and the f64 sqrt errs by at most 2^-29.5)."""
    ax = abs(x)
    ay = abs(y)
    big = max(ax, ay)
    if not (ax < math.inf and ay < math.inf and big > 0.0):
        return _hypot_special_f32(x, y)
    if big < HYPOT_TINY_F32:
        wx = f64(ax)
        wy = f64(ay)
        return f32(math.sqrt(ptxpy.fma(wx, wx, wy * wy)))
    small = min(ax, ay)
    scale = f32(1.0)
    unscale = f32(1.0)
    if big > HYPOT_HUGE_F32:
        scale = TWO_M90_F32
        unscale = TWO_90_F32
    a = big * scale
    b = small * scale
    aa = a * a
    bb = b * b
    s, err = _fast_two_sum_f32(aa, bb)
    lo = err + (ptxpy.fma(a, a, -aa) + ptxpy.fma(b, b, -bb))
    r = math.sqrt(s)
    r = r + (ptxpy.fma(-r, r, s) + lo) / (r + r)
    return r * unscale


@ptxpy.func
def cbrt_f32(x: f32) -> f32:
    """cbrt_f64 in f32: P(m) 2^(i/3) to 2^-10.1, one Halley step (error (2/3) 2^-30.3)."""
    a = abs(x)
    if not (a > 0.0 and a < math.inf):
        return x
    scaled = a
    n = 23
    if a < SMALLEST_NORMAL_F32:
        scaled = a * TWO_24
        n = -1
    bits = ptxpy.bitcast(scaled, u32)
    n = n + i32(bits >> 23)                     # exponent + 150, in [1, 277]
    q = (n * 43691) >> 17
    i = n - 3 * q
    m = ptxpy.bitcast((bits & 0x007FFFFF) | 0x3F800000, f32)
    target = m * f32(1 << i)
    y = _cbrt_f32(m - 1.5) * (CBRT4_F32 if i == 2 else (CBRT2_F32 if i == 1 else 1.0))
    sq = y * y
    cube = sq * y
    cube_lo = ptxpy.fma(sq, y, -cube) + ptxpy.fma(y, y, -sq) * y
    d = (cube - target) + cube_lo
    y = y - y * d / (cube + cube + target)
    return math.copysign(y * _pow2_f32(q - 50), x)


@ptxpy.func
def _scale_pair_f32(hi: f32, lo: f32, k: i32) -> f32:
    """_scale_pair_f64 in f32, for hi in [2^-6, 2] and -155 <= k <= 0."""
    v = _scale_f32(hi + lo, k)
    if v > SMALLEST_NORMAL_F32:
        return v
    units = _pow2_f32(k + 149)
    top, low = _fast_two_sum_f32(hi, lo)
    h = top * units
    n = ptxpy._rint(h)
    rest = (h - n) + low * units
    if rest > 0.5:
        n += 1.0
    elif rest < -0.5:
        n -= 1.0
    return n * 1.401298464324817e-45


@ptxpy.func
def _erfc_big_f32(a: f32) -> tuple[i32, f32, f32]:
    """_erfc_big_f64 in f32 for 15/32 <= a < 10.1, to about 2^-28. The reduction of -a^2 is
    renormalized (a^2's error term reaches 2^-18, beyond what _exp_parts_f32 takes), and
    e^r comes from `_exp_pair_f32`."""
    t = 1.0 / a
    t_lo = t * ptxpy.fma(-t, a, 1.0)
    g: f32 = 0.0
    g_lo: f32 = 0.0
    if a < 2.0:
        g, g_lo = _erfc_near_f32(t - 1.25, t_lo)
    else:
        w, w_err = _two_sum_f32(t, -0.296875)
        g, g_lo = _erfc_far_f32(w, w_err + t_lo)
    v = t * g
    v_lo = ptxpy.fma(t, g, -v) + (t * g_lo + t_lo * g)
    sq = a * a
    sq_lo = ptxpy.fma(a, a, -sq)
    k = ptxpy._rint(-sq * INV_LN2_F32)
    r, r_lo = _two_sum_f32(ptxpy.fma(-k, LN2_F32, -sq), ptxpy.fma(-k, LN2_LO_F32, -sq_lo))
    h, l = _exp_pair_f32(r, r_lo)               # e^(-a^2) = 2^k (h + l)
    m = v * h
    return i32(k), m, ptxpy.fma(v, h, -m) + (v * l + v_lo * h)


@ptxpy.func
def erfc_f32(x: f32) -> f32:
    """erfc_f64 in f32: 0 from 10.1, 2 from -3.92."""
    if x != x:
        return x
    a = abs(x)
    if a < ERFC_NEAR:
        s, err = _two_sum_f32(1.0, -x)
        return s + ptxpy.fma(-x, _erf_small_f32(x * x), err)
    if x >= ERFC_IS_ZERO_F32:
        return 0.0
    if x <= -ERF_IS_ONE_F32:
        return 2.0
    k, hi, lo = _erfc_big_f32(a)
    if x > 0.0:
        return _scale_pair_f32(hi, lo, k)
    scale = _pow2_f32(k)
    s, err = _fast_two_sum_f32(2.0, -hi * scale)
    return s + (err - lo * scale)


# === end of hypot, cbrt and erfc ==================================================================


# === ldexp and frexp: exponents moved exactly =====================================================
@ptxpy.func
def ldexp_f64(x: f64, n: i32) -> f64:
    """x * 2^n rounded once, as musl's scalbn: at most two exact steps of 2^1023 or 2^-969 bring
    n into the normal range. A step down is 2^-969, not 2^-1022: y stays normal unless the
    result is below half the smallest subnormal anyway, so the last product is the only rounding."""
    y = x
    k = n
    if k > 1023:
        y = y * _pow2_f64(1023)
        k -= 1023
        if k > 1023:
            y = y * _pow2_f64(1023)
            k = min(k - 1023, 1023)
    elif k < -1022:
        y = y * _pow2_f64(-969)
        k += 969
        if k < -1022:
            y = y * _pow2_f64(-969)
            k = max(k + 969, -1022)
    return y * _pow2_f64(k)


@ptxpy.func
def ldexp_f32(x: f32, n: i32) -> f32:
    """ldexp_f64 in f32: steps of 2^127 and 2^-102."""
    y = x
    k = n
    if k > 127:
        y = y * _pow2_f32(127)
        k -= 127
        if k > 127:
            y = y * _pow2_f32(127)
            k = min(k - 127, 127)
    elif k < -126:
        y = y * _pow2_f32(-102)
        k += 102
        if k < -126:
            y = y * _pow2_f32(-102)
            k = max(k + 102, -126)
    return y * _pow2_f32(k)


@ptxpy.func
def _frexp_f64(x: f64) -> tuple[f64, i32]:
    """x = m * 2^e with 1/2 <= |m| < 1, read from the bits (a subnormal scaled by 2^54 first);
    zeros, infinities and NaN give (x, 0), as Python's math.frexp. Straight-line code: a kernel
    inlines it for the mantissa and again for the exponent, and CSE keeps one copy."""
    small = abs(x) < SMALLEST_NORMAL
    y = x * TWO_54 if small else x
    bits = ptxpy.bitcast(y, u64)
    e = i32((bits >> 52) & 0x7FF) - (1076 if small else 1022)
    m = ptxpy.bitcast((bits & 0x800FFFFFFFFFFFFF) | 0x3FE0000000000000, f64)
    ordinary = (abs(x) > 0.0) & (abs(x) < math.inf)
    return (m if ordinary else x), (e if ordinary else 0)


@ptxpy.func
def frexp_mantissa_f64(x: f64) -> f64:
    m, e = _frexp_f64(x)
    return m


@ptxpy.func
def frexp_exponent_f64(x: f64) -> i32:
    m, e = _frexp_f64(x)
    return e


@ptxpy.func
def _frexp_f32(x: f32) -> tuple[f32, i32]:
    """_frexp_f64 in f32 (a subnormal scaled by 2^25)."""
    small = abs(x) < _pow2_f32(-126)
    y = x * _pow2_f32(25) if small else x
    bits = ptxpy.bitcast(y, u32)
    e = i32((bits >> 23) & 0xFF) - (151 if small else 126)
    m = ptxpy.bitcast((bits & 0x807FFFFF) | 0x3F000000, f32)
    ordinary = (abs(x) > 0.0) & (abs(x) < math.inf)
    return (m if ordinary else x), (e if ordinary else 0)


@ptxpy.func
def frexp_mantissa_f32(x: f32) -> f32:
    m, e = _frexp_f32(x)
    return m


@ptxpy.func
def frexp_exponent_f32(x: f32) -> i32:
    m, e = _frexp_f32(x)
    return e
