"""program 1064, thread 1, inputs {'a': '-74', 'b': '7.4467403e+11', 'c': '1740672825', 'd': '77'}
output 3 [1, 0]: simulator np.int64(0), card np.int64(77)
(129 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.func
def helper(p0: f32, p1: f64, p2: bool) -> i64:
    p1 *= p2
    return (i64(p1) & i32(p2))

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[u32], d: Array[u64], o_f64: Array[f64, 2], o_bf16: Array[bf16, 2], o_u32: Array[u32, 2], o_i64: Array[i64, 2], o_bool: Array[bool, 2], o_i8: Array[i8, 2]):
    i = ptxpy.global_id(0)
    v4: i64 = 0
    if 0:
        pass
    else:
        if max(0, i, 0):
            pass
        else:
            if 1:
                v4 = i64(d[i])
    o_i64[i, 0] = v4
