"""program 564, thread 0, inputs {'a': '-59', 'b': '-2065.9785', 'c': '10.25'}
output 2 [0, 1]: simulator np.True_, card np.False_
(106 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.func
def helper(p0: u32, p1: i8, p2: i32) -> u16:
    for k1 in range(0, 2, 1):
        w2 = 0
        while w2 < 1:
            w2 += 1
            p1 -= (-128)
            p2 -= 2
            p1 = max(i8((p0 ^ i64(p0))), (p1 & p1))
        p0 = (u32(1.0039062500000002) if (i32(3.25) - p2) else p0)
        for k3 in range(2, 4, 1):
            p0 *= ((p0 if (i16(p1) >= i16(1.0039062500000002)) else u32(0)) >> 31)
    w4 = 0
    while w4 < 5:
        w4 += 1
        p0 = u8(p2)
        for k5 in range(0, 1, 1):
            p2 = i32(i64(k5))
            p2 = (u16((u8(p0) * p1)) ** 2)
            p2 = 100
        p1 = p1
    p2 = (bool(p2) if ((f16(p1) - (-2.5)) == (-2)) else (f16(p2) < float(p1)))
    p0 *= bool(i64(p1))
    return ((p1 << 6) if (f64(3e+38) != max(f64(p2), 65504.0, u16(p1))) else p1)

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[f32], o_f64: Array[f64, 2], o_i16: Array[i16, 2], o_bool: Array[bool, 2], o_f16: Array[f16, 2], o_u32: Array[u32, 2]):
    i = 0
    v1: f64 = 0
    v2: i16 = i16(a[(u64(v1)) & 63])
    v3: bool = (a[i] < 0)
    v4: bool = ((0 == 1) if v2 else v3)
    v4 = (v3 if v4 else (v4 | v3))
    o_bool[i, 1] = v4
