"""program 571, thread 1, inputs {'a': '-19', 'b': '-1.25', 'c': '99', 'd': '12'}
output 2 [0, 0]: simulator np.int16(-12), card np.int16(6)
(148 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[u16], d: Array[u64], o_bool: Array[bool, 2], o_f16: Array[f16, 2], o_i16: Array[i16, 2], o_i64: Array[i64, 2]):
    i = ptxpy.global_id(0)
    v1: bool = (0 <= 2)
    v2: f16 = c[i]
    v3: bool = (i and a[i])
    v4: i16 = v3
    v5: i64 = 0
    if (v4 >= v5):
        v2 //= 0
    else:
        v1 = v3
    t6, t7 = b[(2 * (((v4 - 2)) & 31)):(2 * (((v4 - 2)) & 31)) + 2]
    v4 = i16(t7)
    o_bool[i, 0] = v1
    o_f16[i, 0] = v2
    o_i16[i, 0] = v4
