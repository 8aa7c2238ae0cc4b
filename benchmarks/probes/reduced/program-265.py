import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.func
def helper(p0: i64, p1: bf16, p2: u8) -> u8:
    for k1 in range(i8(0), 1, 1):
        if (f16(k1) == (-2.5)):
            break
        p0 -= k1
        if (k1 <= min((f64(p0) * f64(p0)), f64(p0))):
            p0 -= bool(p1)
            p0 //= ((p0 & 127) + 1)
            p2 = p2
    p2 -= 127
    return f32(((i32(p1) % ((int(p1) & 15) + 1)) - 2147483647))

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], o_bool: Array[bool, 2], o_f16: Array[f16, 2], o_i16: Array[i16, 2], o_u32: Array[u32, 2]):
    i = 0
    v4: i16 = 0
    if 1:
        for k8 in range(0, 2, 1):
            for k9 in range(0, 4, 1):
                v4 = 2
        if (v4 == abs(v4)):
            v4 = 0
        else:
            pass
    else:
        pass
    o_i16[i, 0] = v4

