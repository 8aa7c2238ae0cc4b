import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[f32], o_f16: Array[f16, 2], o_bool: Array[bool, 2], o_i32: Array[i32, 2], o_u64: Array[u64, 2]):
    i = ptxpy.global_id(0)
    v1: f16 = i64(i)
    v3: bool = (f64(v1) > a[i])
    v4: i32 = u16(v1)
    v5: u64 = (0 if (f64(v4) <= (u64(c[(u8(v3)) & 63]) / 18446744073709551615)) else (u32(0) if (c[i] >= u8(v3)) else u16(v1)))
    o_i32[i, 0] = v4
    o_u64[i, 0] = v5

