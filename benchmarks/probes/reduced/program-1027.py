import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[i32], d: Array[u32], o_i64: Array[i64, 2], o_bf16: Array[bf16, 2], o_f32: Array[f32, 2], o_bool: Array[bool, 2], o_i32: Array[i32, 2]):
    i = 1
    v3: f32 = b[(min(d[(u64(c[(u16(i)) & 63])) & 63], d[i])) & 63]
    v5: f32 = 1
    for k8 in range(0, 2, 1):
        if (0 < 1 == d[(i8((k8 - 0))) & 63]):
            pass
        else:
            if ((i8(b[(i32((-4.0))) & 63]) - i16(v3)) <= i16(v3)):
                v5 = 7
    o_f32[i, 1] = v5

