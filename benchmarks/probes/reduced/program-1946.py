"""program 1946, thread 0, inputs {'a': '1139985210', 'b': '6.1127754e+10'}
output 4 [1, 0]: simulator np.float16(1.0), card np.float16(0.0)
(140 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], o_bool: Array[bool, 2], o_i8: Array[i8, 2], o_i64: Array[i64, 2], o_u64: Array[u64, 2], o_f16: Array[f16, 2]):
    i = 1
    v1: bool = (0 >= b[i])
    v2: i8 = i8((v1 | 127))
    v5 = 1
    v2 <<= 5
    if (u16(v2) > u16(b[(max(v2, v2, v1)) & 63])):
        if 1:
            v5 = 0
        else:
            pass
    else:
        pass
    o_f16[i, 0] = v5
