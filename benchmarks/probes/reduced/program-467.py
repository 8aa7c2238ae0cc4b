import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[f32], d: Array[i64], o_bool: Array[bool, 2], o_i8: Array[i8, 2], o_bf16: Array[bf16, 2], o_i64: Array[i64, 2]):
    i = 1
    v1: bool = bool(a[i])
    v2: bool = bool(1)
    v3: i8 = 1
    v4: bf16 = 0
    v5: i64 = (0 % ((d[(min(u64(v4), u64(d[i]), u8(a[((u64(v2) * u64(c[i]))) & 63]))) & 63] & 127) + 1))
    if v1:
        for k6 in range(0, 6, 1):
            if 1:
                v3 &= v1
                v1 ^= v2
            else:
                pass
            if (not v5):
                continue
            v1 = v2
    o_i8[i, 0] = v3

