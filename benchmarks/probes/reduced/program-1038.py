"""program 1038, thread 0, inputs {'a': '-42', 'b': '9.0', 'c': '141.6', 'd': '26'}
output 0 [0, 1]: simulator np.True_, card np.False_
(126 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[f16], d: Array[u8], o_bool: Array[bool, 2], o_u8: Array[u8, 2], o_f64: Array[f64, 2], o_u64: Array[u64, 2], o_bf16: Array[bf16, 2], o_u32: Array[u32, 2]):
    i = ptxpy.global_id(0)
    v1: bool = bool(i)
    v2: bool = (65535 < 0)
    v4: f64 = (1 % i64(len(a)))
    if 1:
        if (not v1):
            for k10 in range(2, 6, 1):
                v2 = v1
                v1 = bool(2)
        else:
            pass
    else:
        pass
    o_bool[i, 1] = v2
    o_f64[i, 0] = v4
