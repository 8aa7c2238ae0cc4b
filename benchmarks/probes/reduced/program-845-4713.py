"""program 845, thread 7, inputs {'a': '82', 'b': '-1018.3977', 'c': '10.0', 'd': '-78'}
output 4 [0, 1]: simulator np.float32(33.0), card np.float32(1.0)
(107 candidates tried)
driver 580's JIT (ptxas 13.0); seed 4713, --exchange --atomic --warp --memory --loops --vectors
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.func
def helper(p0: i32) -> i32:
    for k1 in range(0, 1, 1):
        for k2 in range(0, 0, 1):
            p0 = (((i32(1) * 1) + 0) // 1)
            p0 //= ((k2 & 127) + 1)
        p0 *= 31
    p0 = 2147483647
    for k3 in range(0, 3, 1):
        if (i16(k3) != 7):
            break
        p0 = (-max(u8(k3), 31, bool(k3)))
        if (i16(k3) <= (((i16(k3) & 32767) << 15) // (((i16(k3) if (bf16(k3) == (-1.5)) else i16(p0)) & 127) + 1)) != ((i16(p0) << (u8(p0) & 63)) - (p0 <= 3))):
            p0 = (i16((u32(k3) ^ u8(1.0039062500000002))) | (u16(p0) << 15))
            p0 = 2
            p0 = u8(p0)
    for k4 in range(0, 5, 1):
        p0 ^= (-1)
    return p0

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[f16], d: Array[i16], o_bf16: Array[bf16, 2], o_i32: Array[i32, 2], o_f64: Array[f64, 2], o_u64: Array[u64, 2], o_acc: Array[f32, 2]):
    i = ptxpy.global_id(0)
    v1: bf16 = d[(helper(u64(c[i]))) & 63]
    s_acc = ptxpy.shared_array(4, f32)
    if i == 0:
        s_acc[0] = f32(0.5)
        s_acc[1] = f32(1.0)
        s_acc[2] = f32(0.5)
        s_acc[3] = f32(0.1)
    ptxpy.syncthreads()
    if 1:
        for k9 in range(0, 4, 1):
            ptxpy.atomic_max(s_acc, 1, v1)
    else:
        pass
    ptxpy.syncthreads()
    if i == 0:
        o_acc[0, 0] = s_acc[0]
        o_acc[0, 1] = s_acc[1]
        o_acc[0, 2] = s_acc[2]
        o_acc[0, 3] = s_acc[3]
