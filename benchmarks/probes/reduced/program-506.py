"""program 506, thread 0, inputs {'a': '-11', 'b': 'inf'}
output 3 [0, 0]: simulator np.True_, card np.False_
(113 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], o_i8: Array[i8, 2], o_i32: Array[i32, 2], o_u8: Array[u8, 2], o_bool: Array[bool, 2], o_bf16: Array[bf16, 2]):
    i = 0
    v4: bool = (bool(0) if (1 // u16(len(a))) else (a[i] <= 0))
    if v4:
        for k6 in range(0, 6, 1):
            if (not v4):
                v4 |= (0 == 0)
            else:
                v4 = (0 > 0)
    o_bool[i, 0] = v4
