"""program 1467, thread 0, inputs {'a': '-7', 'b': '-8.75', 'c': '0.0005546718343569877'}
output 2 [0, 0]: simulator np.uint32(3), card np.uint32(1)
(48 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.func
def helper(p0: f64, p1: u32) -> u32:
    w1 = 0
    while w1 < 6:
        w1 += 1
        if (i32(p1) == p1):
            p1 = ((abs(u8(p1)) // ((u8(p1) & 15) + 1)) - (u8(p1) + bool(p1)))
            p1 = 2147483647
        else:
            p0 *= 0.001
            p0 = p0
        if ((u16(p1) if (bf16(p0) <= bf16(p0)) else u16(p1)) == 31):
            continue
    w2 = 0
    while w2 < 1:
        w2 += 1
        p0 = (p0 if ((i8(p1) if (i64(p1) != 65535) else i64(p1)) <= min(i64(0.1), i64(p1)) >= i64(bool(p1))) else (p0 / 2.0))
    return ((u32(2) - p1) & p1)

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[f64], o_f16: Array[f16, 2], o_bool: Array[bool, 2], o_u32: Array[u32, 2]):
    i = 0
    v4: u32 = helper(1099511627776, 2)
    o_u32[i, 0] = v4
