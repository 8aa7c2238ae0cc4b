"""ptxpy's accurate math library, written in the ptxpy kernel language.

The compiler reads this file with its own frontend (transpiler/mathlib.py) and inlines
`NAME_f32` or `NAME_f64` wherever a kernel calls `math.NAME` on that type: exp exp2 log log2
log10 sin cos tan tanh erf pow fmod; and `floordiv_*`/`floormod_*` for the float operators `//`
and `%`. It is never imported to compute anything. Everything here is
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
