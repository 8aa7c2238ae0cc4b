"""program 1278, thread 59, inputs {'a': '-2147483648', 'b': 'nan'}
output 2 [59, 1]: simulator np.False_, card np.True_
(81 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], o_f64: Array[f64, 2], o_u16: Array[u16, 2], o_bool: Array[bool, 2], o_i64: Array[i64, 2], o_i32: Array[i32, 2]):
    i = ptxpy.global_id(0)
    v5: bool = (0 < 0)
    if 1:
        v5 |= (abs(b[i]) >= 0)
    o_bool[i, 1] = v5
