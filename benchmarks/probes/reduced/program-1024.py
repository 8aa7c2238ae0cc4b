import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[u16], o_i16: Array[i16, 2], o_u32: Array[u32, 2], o_u8: Array[u8, 2], o_i8: Array[i8, 2], o_bool: Array[bool, 2]):
    i = ptxpy.global_id(0)
    v1: i16 = i16(i)
    v4: i8 = i8(i)
    v5: bool = bool(v1)
    v6: i8 = (v4 % (-8))
    if v5:
        if 0:
            pass
        else:
            for k8 in range(2, 5, 1):
                v4 = ((0 <= 0) if v6 else v5)
                v5 ^= (not (1 == c[(v4) & 63]))
    o_i8[i, 0] = v4

