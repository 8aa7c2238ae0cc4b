"""Program 1529 of seed 4706 (--exchange --atomic --warp --memory --loops --vectors): on the
H100 under the driver's JIT (ptxas 13.0) CUDA_ERROR_INVALID_ADDRESS_SPACE; right with ptxas 13.5.
Cut down on the CPU by `sass_hazards.py --reduce 4706 1529 ...` (the uniform-register hazard
of program 767), not on the card:
# branch /*03b0*/ @!P0 BRA `(.L_x_5) (line 21): /*0570*/ UMOV UR4, 0xffffffff (line 23) on one side writes UR4, which /*0490*/ IMAD.U32 R4, RZ, RZ, UR4 (line 23) on the other side reads from before
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.func
def helper(p0: f32, p1: i8) -> u64:
    p1 = p1
    p0 = u8((-5))
    if (f16(p0) > f16(p0)):
        p1 = p1
    return ((u64(p0) & u8(p1)) // 1)

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[i8], o_f32: Array[f32, 2], o_bf16: Array[bf16, 2], o_bool: Array[bool, 2], o_acc: Array[f32, 2]):
    i = ptxpy.global_id(0)
    v4: bf16 = (0 / bf16((i8((-4.0)) / a[i])))
    v5: bool = (0 < v4)
    if 1:
        o_acc[0, 3] = 0
    v2 = 0
    if c[(c[i]) & 63]:
        for k12 in range(2, len(a), 3):
            ptxpy.atomic_max(o_acc, (0, 3), 0)
    v2 = ptxpy.any_sync(0)
    ptxpy.syncthreads()
    if (1 % (((i64(b[i]) * i64(v2)) & 3) + 1)):
        v2 = 100
    v5 = ((v5 == 200) if b[((i if v4 else c[((i64(v5) % ((i64(v2) & 7) - 8))) & 63])) & 63] else (0 <= (-128)))
    o_bool[i, 0] = v5

