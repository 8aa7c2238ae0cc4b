"""program 767 of seed 4323 (`--exchange --atomic --vectors --loops`), as generated (not cut
down): on the H100, a misaligned global read at line 42 (program767_probe.py,
docs/ptx-dialect.md "Open (session 25)")."""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[i64], d: Array[i64], o_f64: Array[f64, 2], o_i8: Array[i8, 2], o_i64: Array[i64, 2], o_u32: Array[u32, 2], o_acc: Array[f32, 2]):
    i = ptxpy.global_id(0)
    v1: f64 = (d[(d[(u32(d[(u8(i)) & 63])) & 63]) & 63] // (((c[i] * u16(b[i])) & 127) + 1))
    v2: i8 = ((i8(c[(i32(100)) & 63]) % i8(len(a))) + (bool(i) ^ bool(v1)))
    v3: i64 = c[(u8(v2)) & 63]
    v4: u32 = ((u32(v2) if b[i] else u32(a[i])) & u32(i))
    s_acc = ptxpy.shared_array(4, f32)
    if i == 0:
        s_acc[0] = f32(1.0)
        s_acc[1] = f32(3e+38)
        s_acc[2] = f32(2.0)
        s_acc[3] = f32(-4.0)
    ptxpy.syncthreads()
    xs = ptxpy.shared_array(64, u64)
    if (a[i] == 7):
        if (u8(c[i]) <= u8((-1099511627776))):
            v3 -= ((u16(v3) | 127) + (u16(v3) >> 16))
        else:
            for k5 in range(0, (len(a) >> 4), 2):
                t6, t7 = c[14:14 + 2]
                v3 = t6
                v2 = i8(t7)
            for k8 in range(0, (len(a) >> 4), 1):
                v1 = (f64((u16(v4) / c[(u16(f16(v1))) & 63])) ** 0)
                v4 ^= u8(c[i])
    else:
        v4 = v4
        w9 = 0
        while w9 < (i & 3):
            w9 += 1
            t10, t11, t12, t13 = a[(4 * (((u8(v3) & u64(i))) & 15)):(4 * (((u8(v3) & u64(i))) & 15)) + 4]
            v2 = i8(t10)
            v2 = i8(t12)
            v4 = u32(t13)
            if ((u64(v2) + 4294967295) >= u64(v2)):
                v2 = (-128)
                v1 = f64(((c[((u8(i) & u16(i))) & 63] if (v1 == v1) else v3) / (i64((-128)) ^ 2)))
            else:
                v4 //= u32(len(a))
                ptxpy.atomic_min(s_acc, 3, ((b[i] + bool(c[i])) ** 1))
            v3 = ((((v3 if i32(3.25) else v3) & 255) << 32) % i64(len(a)))
    ptxpy.syncthreads()
    xs[i] = (u64(b[i]) * 65535)
    ptxpy.syncthreads()
    v2 = i8(xs[((((i64(i) * 32767) + 9223372036854775807) % ((d[((a[i] ^ (-128))) & 63] & 7) - 8))) & 63])
    ptxpy.atomic_max(s_acc, 1, (u64(i) - (v3 if (v1 != v1) else v3)))
    ptxpy.syncthreads()
    if i == 0:
        o_acc[0, 0] = s_acc[0]
        o_acc[0, 1] = s_acc[1]
        o_acc[0, 2] = s_acc[2]
        o_acc[0, 3] = s_acc[3]
    o_f64[i, 0] = v1
    o_i8[i, 0] = v2
    o_i64[i, 0] = v3
    o_u32[i, 0] = v4
