"""Program 819 of seed 4728 (--exchange --atomic --warp --memory --loops --vectors): on the
H100 under the driver's JIT (ptxas 13.0) CUDA_ERROR_INVALID_ADDRESS_SPACE; program 767's class.
Cut down on the CPU by `sass_hazards.py --reduce 4728 819 ...` (not run on the card):
# branch /*0210*/ @!P1 BRA `(.L_x_1) (line 13): /*0400*/ VOTEU.ANY UR6, UPT, PT (line 19) on one side writes UR6, which /*0250*/ LDG.E R4, desc[UR6][R4.64+0xc] (line 16) on the other side reads from before
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[bf16], o_i64: Array[i64, 2], o_u8: Array[u8, 2], o_bool: Array[bool, 2], o_i32: Array[i32, 2], o_acc: Array[f32, 2], o_mem: Array[u64, 2]):
    i = ptxpy.global_id(0)
    v1: i64 = i
    v3: bool = bool(v1)
    v6: bool = v3
    m = ptxpy.shared_array((64, 4), u64)
    m[i, 3] = 0
    if (u64(b[i]) // ((u64(v3) & 15) + 1)):
        for k10 in range(0, 1, 1):
            if 1:
                ptxpy.atomic_max(o_acc, (0, 3), 0)
    else:
        pass
    v3 = bool(ptxpy.warp_min(0))
    ptxpy.syncthreads()
    v6 = bool(ptxpy.atomic_or(m, (i, 0), (1 // ((u64(v6) & 3) + 1))))

