import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.func
def helper(p0: u8) -> i64:
    if (f16(p0) if (i8(p0) != i8(p0)) else f16(p0)):
        p0 = p0
        p0 = bool(p0)
    p0 %= (((p0 * u8(f32(p0))) & 3) + 1)
    return ((i64(p0) if (127 <= i64(p0) != f64(0.5)) else i64(p0)) if ((u32(p0) >= int(p0)) and (i64(p0) <= i64(p0))) else (i8(p0) + i64(p0)))

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[u16], o_u8: Array[u8, 2], o_u64: Array[u64, 2], o_bool: Array[bool, 2], o_u32: Array[u32, 2], o_f64: Array[f64, 2], o_i16: Array[i16, 2]):
    i = ptxpy.global_id(0)
    v3: bool = (b[i] != 0)
    v6: bool = (0 <= 0 <= 0)
    v7: i16 = (i16(i) % 200)
    if v3:
        for k8 in range(0, 4, 1):
            for k9 in range(0, 1, 1):
                v6 = v3
                v3 = (0 < 0)
    else:
        pass
    o_bool[i, 1] = v6
    o_i16[i, 0] = v7

