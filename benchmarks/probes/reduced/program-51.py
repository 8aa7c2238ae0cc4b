"""program 51, thread 0, inputs {'a': '98', 'b': '6.0', 'c': '65', 'd': '72'}
output 1 [0, 1]: simulator np.int8(0), card np.int8(1)
(131 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.func
def helper(p0: u32) -> f16:
    p0 = (u8(p0) ^ 0)
    p0 = (p0 - (u8(p0) if (f16(p0) <= f16(p0) != f16(0.125)) else u8(p0)))
    return min((f16(p0) if (i16(p0) <= i16(p0)) else f16(p0)), 100000)

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[i16], d: Array[u32], o_u16: Array[u16, 2], o_i8: Array[i8, 2], o_bool: Array[bool, 2]):
    i = 0
    v1: u16 = 0
    v3: bool = (0 >= 0)
    v4 = False
    if a[i]:
        pass
    else:
        v3 = (d[((((v1 & 65535) + v1) // 200)) & 63] <= 0)
    w8 = 0
    while w8 < 5:
        w8 += 1
        v4 = v3
    v1 = ((v3 | v4) ^ v3)
    v4 = (v3 & v4)
    o_i8[i, 1] = v1
    o_bool[i, 1] = v4
