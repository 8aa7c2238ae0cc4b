import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[i8], d: Array[i64], o_f32: Array[f32, 2], o_i8: Array[i8, 2], o_i64: Array[i64, 2], o_u16: Array[u16, 2], o_f64: Array[f64, 2], o_bf16: Array[bf16, 2]):
    i = ptxpy.global_id(0)
    v3: i64 = 0
    v5: f64 = (a[i] * f64(c[i]))
    if 0:
        pass
    else:
        v3 = u32(v5)
    v3 <<= 21
    o_i64[i, 0] = v3

