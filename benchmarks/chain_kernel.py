"""The tiny kernel of benchmarks/launch.py's chains, written in ptxpy (its own module, so that
only the workers that use it import ptxpy and decorate it)."""
import ptxpy
from ptxpy import Array, f32

BLOCK = 256


@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: (ptxpy.cdiv(x.shape[0], BLOCK),), block=BLOCK)
def add1_kernel(x: Array[f32], out: Array[f32]):
    """out = x + 1. Compiled for sm_90 it begins with griddepcontrol.wait, so XLA's graph may
    launch it as a programmatic dependent launch."""
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = x[i] + 1.0


WIDE_BLOCK = 128     # threads; each adds two float4s, 512 elements apart: 1024 per block


@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: (ptxpy.cdiv(x.shape[0], 8 * WIDE_BLOCK),),
           block=WIDE_BLOCK)
def add1_wide(x: Array[f32], out: Array[f32]):
    """out = x + 1 in the launch shape Pallas picks for 1024 elements: one block of four warps,
    eight elements per thread (two 128-bit loads and stores)."""
    n = x.shape[0]
    i = ptxpy.program_id(0) * (8 * WIDE_BLOCK) + ptxpy.thread_idx.x * 4
    j = i + 4 * WIDE_BLOCK
    if j + 4 <= n:
        a0, a1, a2, a3 = x[i:i + 4]
        b0, b1, b2, b3 = x[j:j + 4]
        out[i:i + 4] = (a0 + 1.0, a1 + 1.0, a2 + 1.0, a3 + 1.0)
        out[j:j + 4] = (b0 + 1.0, b1 + 1.0, b2 + 1.0, b3 + 1.0)
    else:
        for k in range(i, min(i + 4, n)):
            out[k] = x[k] + 1.0
        for k in range(j, min(j + 4, n)):
            out[k] = x[k] + 1.0
