import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[u64], d: Array[i8], o_i16: Array[i16, 2], o_f64: Array[f64, 2], o_bool: Array[bool, 2], o_bf16: Array[bf16, 2], o_u16: Array[u16, 2], o_i64: Array[i64, 2]):
    i = ptxpy.global_id(0)
    v1: i16 = 17
    v2: f64 = i
    v3: bool = (v1 == max(0, v1, bool(v2)))
    o_bool[i, 0] = v3

