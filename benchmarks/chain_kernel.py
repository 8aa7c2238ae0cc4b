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
