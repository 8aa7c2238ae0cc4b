"""program 528, thread 0, inputs {'a': '-2147483647', 'b': '5.5', 'c': '0'}
output 2 [0, 0]: simulator np.float32(99999.0), card np.float32(99998.99)
(85 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.func
def helper(p0: f16, p1: i8, p2: bool) -> f16:
    if ((u32(p0) & 100) < f64((i16(p1) + 1))):
        w1 = 0
        while w1 < 4:
            w1 += 1
            p2 ^= (u16(p1) < (u8(p2) & u16(p1)))
            p2 = p2
            p2 = (f64((i16(p2) / (-1))) <= abs(f64(p1)))
        for k2 in range(2, 4, 1):
            p2 = (u64(p1) <= (u64(p0) ** 0))
            p2 = ((p2 if (u64(k2) >= 127) else bool((-1))) & p2)
            p1 = ((p1 ^ p1) if (f64(u8(k2)) != f64((i64(p1) / 4294967295))) else p1)
        if ((~(u64(p0) + u32(p1))) >= u8(abs(u16(p2)))):
            p1 <<= (p1 & 15)
        else:
            p0 = i8(max(u64(1), u64(p1)))
            p2 = (f32(p1) == (u8(p0) & u8(p1)))
    else:
        if ((u64(p1) if (abs(u16(p0)) == u16(p0)) else p2) == u32(p1)):
            p0 *= u32(p0)
            p0 = (f16((i64((-3.75)) / 32767)) + (p0 ** 0))
            p2 ^= ((u64(p1) * 4294967295) > (u8(p0) & u32(p1)))
        else:
            p1 = p1
        p1 = ((p1 | (-5)) ^ (p1 << (p1 & 7)))
    return ((u8(0.1) ^ u64(p1)) * p0)

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[u8], o_i16: Array[i16, 2], o_bool: Array[bool, 2], o_f32: Array[f32, 2]):
    i = 0
    v3: f32 = 0
    for k8 in range(0, 1, 1):
        for k9 in range(1, 4, 1):
            v3 = 100000
    v3 = (v3 - 1.0039062500000002)
    o_f32[i, 0] = v3
