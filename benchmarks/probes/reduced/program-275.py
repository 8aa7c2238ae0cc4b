"""program 275, thread 28, inputs {'a': '37', 'b': '4.0', 'c': '0', 'd': '-4'}
output 2 [0, 0]: simulator np.int32(0), card np.int32(98)
(155 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[u16], d: Array[i16], o_i64: Array[i64, 2], o_u64: Array[u64, 2], o_i32: Array[i32, 2], o_bool: Array[bool, 2]):
    i = 0
    v1: i64 = 0
    v2: u64 = c[i]
    v3: i32 = i8(v2)
    v4: bool = bool(d[i])
    v1 |= u8((0 / u32(v3)))
    if v4:
        for k5 in range(0, 3, 1):
            if (not v4):
                v3 = 0
            else:
                v4 = (0 < (a[(v1) & 63] * (-128)) != 0)
    o_i32[i, 0] = v3
