import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[f32], o_f64: Array[f64, 2], o_i64: Array[i64, 2], o_bool: Array[bool, 2]):
    i = 1
    v1: f64 = 1
    v2: f64 = 0
    v4 = (not (0 < 1 <= b[(u64(v1)) & 63]))
    if 1:
        v1 = (0 if v4 else a[((u16(a[(u16(v2)) & 63]) & 200)) & 63])
    if v4:
        if (32767 // ((u16(v1) & 7) + 1)):
            for k7 in range(0, 4, 1):
                v4 = (bool(1) ^ v4)
        else:
            pass
    else:
        pass
    o_bool[i, 0] = v4

