
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[i64], d: Array[f64], o_bool: Array[bool, 2], o_f32: Array[f32, 2], o_bf16: Array[bf16, 2], o_u16: Array[u16, 2], o_u64: Array[u64, 2], o_acc: Array[i64, 2], o_mem: Array[f64, 2]):
    i = ptxpy.global_id(0)
    v1: bool = ((b[((u64(b[i]) % ((u64(i) & 127) + 1))) & 63] * a[i]) == u32(a[i]))
    v2: f32 = b[((c[i] & a[(u8(u32(v1))) & 63])) & 63]
    v3: bf16 = bf16(v2)
    v4: u16 = (u16(d[(i) & 63]) * (u16(v3) + u16(i)))
    v5: u64 = (((u64(i) * 3) + 18446744073709551615) % u64(len(a)))
    o_mem[i, 0] = max((d[i] - d[i]), 16842753)
    o_mem[i, 1] = ((v3 if (f16(d[(i16(d[(v4) & 63])) & 63]) != f16(v1)) else v3) if ((v5 - 9223372036854775807) >= i) else (i8(i) & i16(d[i])))
    o_mem[i, 2] = v3
    o_mem[i, 3] = (d[(max(c[i], 127, c[(a[(c[(i8(a[((u8(v2) ^ v4)) & 63])) & 63]) & 63]) & 63])) & 63] - (i16(b[i]) / d[i]))
    s_acc = ptxpy.shared_array(4, i64)
    if i == 0:
        s_acc[0] = i64(0)
        s_acc[1] = i64(4294967295)
        s_acc[2] = i64(-5)
        s_acc[3] = i64(100)
    ptxpy.syncthreads()
    o_mem[i, 1] = i8(c[((v4 - u8(v3))) & 63])
    for k6 in range(0, 3, 1):
        v3 //= 3.0
        ptxpy.atomic_or(s_acc, 3, (~i))
    if (f16(d[(i) & 63]) == 3):
        if (((u8(o_mem[i, 2]) << 7) ^ min(i64(o_mem[i, 1]), 4611686018427387904, i16(v2))) != v4):
            o_mem[i, (v5) & 3] = (d[i] + d[i])
            if max(u32(c[i]), u32(255), v4):
                ptxpy.atomic_max(s_acc, 2, ((i & (-128)) << ((i8(i) if (u32(1152921573326323713) > 16842753) else i8(v2)) & 7)))
                ptxpy.atomic_or(s_acc, 3, i64(i16(c[i])))
            else:
                o_mem[i, (i8(i)) & 3] = (i16(v4) if ((i16(d[i]) >> (i8(a[i]) & 31)) != i16(v2)) else (((i16(v1) & 255) + 32767) // ((i16(v2) & 7) - 8)))
            if v1:
                v3 = bf16(((i8(b[i]) ^ c[i]) / (u32(d[i]) if (u8(o_mem[i, (u8(i16(d[((a[i] ** 3)) & 63]))) & 3]) == 255) else u32(v5))))
        v5 = 2147483647
    else:
        o_mem[i, (i64((i8(d[i]) ^ 31))) & 3] = f64((v4 if v1 else v4))
        v3 = bf16((a[i] / v5))
    v3 = bf16(ptxpy.warp_sum(((v1 - i8(o_mem[i, (u8(i)) & 3])) >> ((-i8(v4)) & 63))))
    ptxpy.syncthreads()
    if i == 0:
        o_acc[0, 0] = s_acc[0]
        o_acc[0, 1] = s_acc[1]
        o_acc[0, 2] = s_acc[2]
        o_acc[0, 3] = s_acc[3]
    o_bool[i, 0] = v1
    o_f32[i, 0] = v2
    o_bf16[i, 0] = v3
    o_u16[i, 0] = v4
    o_u16[i, 1] = v2
    o_u64[i, 0] = v5
