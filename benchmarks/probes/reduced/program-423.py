"""program 423, thread 1, inputs {'a': '-24', 'b': '-5.0'}
output 5 [1, 1]: simulator np.uint64(18446744073709551615), card np.uint64(0)
(145 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.func
def helper(p0: u8, p1: f32) -> u8:
    p1 = (u16(p0) - (p1 if (int(p1) > i32(p1)) else p1))
    for k1 in range(1, 6, 3):
        w2 = 0
        while w2 < 4:
            w2 += 1
            p0 |= 3
            p1 += (i8((i64(p1) ^ u8(3e+38))) if (i16(p1) != (i16(k1) >> (i16(p0) & 15))) else (i8(p1) | 7))
            p0 = u8(((u32(p1) & 16842753) & i16(k1)))
        p1 = max(p0, 31, (p0 < p0))
        p0 = ((p0 if ((-4.0) <= bf16(p1) != u64(k1)) else p0) - u8((u64(p1) + p0)))
    p0 = (p0 ** 3)
    if (not ((i8(p1) + u32(p0)) <= (-1))):
        if (((f16(p0) / 0.1) / 0.1) <= ((f64(p1) ** 0) // max(f64(p1), f64(p0)))):
            p0 = 7
            p1 *= i8(p1)
        p0 = u8((i32(p1) - (-128)))
    return ((p0 if (i8(p1) == i8(p1)) else p0) * (p0 | 31))

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], o_i64: Array[i64, 2], o_i32: Array[i32, 2], o_f32: Array[f32, 2], o_bool: Array[bool, 2], o_u16: Array[u16, 2], o_mem: Array[u64, 2]):
    i = ptxpy.global_id(0)
    v1: i64 = i
    v2: i32 = min(i, i32(((-1) * v1)), 0)
    m = ptxpy.shared_array((64, 4), u64)
    m[i, 0] = 0
    m[i, 1] = v2
    m[i, 2] = 0
    m[i, 3] = 0
    m[i, 0] = 0
    o_mem[i, 0] = 0
    o_mem[i, 1] = m[i, 1]
    o_mem[i, 2] = 0
    o_mem[i, 3] = 0
