"""program 285, thread 4, inputs {'a': '-1', 'b': '5.5', 'c': '-12195.281', 'd': '6954501286721231538'}
output 0 [1, 1]: simulator 4.29497e+09, card -70
(138 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.func
def helper(p0: i32, p1: f16) -> u8:
    for k1 in range(2, 5, 3):
        if (u16(k1) != u16(p1)):
            break
        p1 /= (u8(p1) << 9)
        if (((~i64(k1)) ^ 65535) > min((i64(k1) + 9223372036854775807), i64(3.25), (u8(k1) if (i16(p1) >= f32(k1)) else i16(k1)))):
            p1 = f16((u64(k1) / u64(k1)))
        else:
            p1 = p1
            p0 = k1
    return u8(p0)

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[f32], d: Array[i64], o_bf16: Array[bf16, 2], o_bool: Array[bool, 2], o_u16: Array[u16, 2], o_u32: Array[u32, 2], o_mem: Array[i8, 2]):
    i = 1
    o_mem[i, 0] = 0
    o_mem[i, 1] = 0
    o_mem[i, 2] = 0
    o_mem[i, 3] = 0
    if 1:
        for k14 in range(0, 4, 1):
            if 1:
                v1 = k14
            o_mem[i, (i32(f64(v1))) & 3] = d[i]
    t25, t26, t27, t28 = o_mem[i, 0:0 + 4]
    v4 = u32(t28)
    o_bf16[i, 1] = v4
