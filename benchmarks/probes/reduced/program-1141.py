import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[f32], d: Array[f32], o_f32: Array[f32, 2], o_f64: Array[f64, 2], o_u8: Array[u8, 2], o_bool: Array[bool, 2], o_u16: Array[u16, 2]):
    i = ptxpy.global_id(0)
    v2: f64 = 1
    v3: f64 = i
    v5: bool = bool(v3)
    if 1:
        if (v3 and b[i]):
            v2 = 0
    if v5:
        for k10 in range(0, 6, 1):
            v5 ^= bool(1)
    else:
        pass
    o_f64[i, 0] = v2
    o_bool[i, 0] = v5

