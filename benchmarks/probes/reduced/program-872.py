"""program 872, thread 0, inputs {'a': '-40', 'b': '0.75', 'c': '51'}
output 2 [0, 1]: simulator -0, card 0
(83 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.func
def helper(p0: u8) -> i8:
    for k1 in range(0, 2, 1):
        if ((u32(100) | u32(p0)) <= u32(k1) > (u32(p0) << 11)):
            continue
        p0 = 1
    if ((i16(p0) ^ u32(p0)) > (-5)):
        for k2 in range(u32(0), 1, 1):
            p0 &= 0
        w3 = 0
        while w3 < 4:
            w3 += 1
            p0 = 255
            p0 |= ((i64(p0) <= p0) or (f32(p0) >= float(p0)))
    w4 = 0
    while w4 < 0:
        w4 += 1
        p0 %= (((p0 - (p0 | p0)) & 127) + 1)
    return i8(p0)

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[i32], o_bool: Array[bool, 2], o_u8: Array[u8, 2], o_bf16: Array[bf16, 2]):
    i = 0
    v1: bool = (0 <= helper(0) >= 0)
    v2: u8 = v1
    v3: bf16 = (-bf16(v2))
    v4: bf16 = v3
    o_bool[i, 1] = v3
    o_bf16[i, 1] = v4
