"""program 2030, thread 13, inputs {'a': '-56', 'b': '6.0', 'c': '58', 'd': '-3'}
output 3 [1, 1]: simulator np.float32(-1.0), card np.float32(3.0)
(184 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.func
def helper(p0: i16, p1: i16, p2: i16) -> i32:
    for k1 in range(0, 5, 1):
        if (bf16(u32(p1)) <= (i8(p0) if (f32(p2) <= f32(p0)) else i8(p1))):
            break
        for k2 in range(0, 1, 1):
            p1 = (-(u8(k1) - p1))
            p1 &= min((u8(k1) ^ p0), p2, p1)
        for k3 in range(0, 0, 1):
            p1 = ((i8(p2) + i8(p1)) ^ u8(p2))
            p2 = 200
            p0 <<= 16
    for k4 in range(0, 3, 1):
        if (((u64(p2) * p1) * f64((u32(p2) / 100))) == i64(p1)):
            p1 <<= (((u8(p0) & 255) ^ 100) & 15)
            p0 = ((p1 + p1) - p1)
        else:
            p1 ^= u8(p2)
        p1 *= (p2 ^ 200)
    return f16(p0)

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[u64], d: Array[i32], o_bf16: Array[bf16, 2], o_bool: Array[bool, 2], o_i16: Array[i16, 2], o_f32: Array[f32, 2], o_i64: Array[i64, 2]):
    i = ptxpy.global_id(0)
    v1: bf16 = i
    v2: bool = bool(v1)
    v3: bf16 = helper(0, 0, v2)
    v4: i16 = i16(b[((u16(i) + u16(d[i]))) & 63])
    v5: f32 = 0
    if v2:
        if v4:
            v5 = (0 / (v5 if (f16(v2) != f16(d[(v4) & 63])) else b[(i8(v2)) & 63]))
        else:
            v2 = True
        if 1:
            for k7 in range(0, 4, 1):
                v2 &= ((v4 / v1) >= 0)
                v1 = (-1)
            if v2:
                v4 = 3
        else:
            pass
    o_f32[i, 1] = v4
