"""Hopper's mbarrier and bulk copies: `ptxpy.mbarrier_init / mbarrier_arrive /
mbarrier_arrive_expect_tx / mbarrier_wait` and `ptxpy.cp_async_bulk` (PTX `cp.async.bulk`, global
to shared completing on an mbarrier, shared to global in bulk groups). Checked against NumPy in
the simulator (on the GPU with PTXPY_TEST_DEVICE=gpu), the checks of debug=True, the
compile-time errors, the PTX and a kernel called through JAX."""
import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ptxpy
from kernel_harness import Out, assemble_all, compile_source, run
from ptxpy import Array, f32, u64
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.transpiler.errors import CompileError

ON_GPU = os.environ.get("PTXPY_TEST_DEVICE") == "gpu"
SIMULATOR_ONLY = pytest.mark.skipif(ON_GPU, reason="the simulator's model; undefined on a GPU")
HOPPER = ("sm_90",)

HEADER = """
import ptxpy
from ptxpy import Array, f16, f32, i32, u8, u32, u64
"""

# Rows of x through two shared buffers: thread 0 starts row r + 1's bulk copy, completing on
# its buffer's barrier, while every thread works on row r (the barrier of buffer s completes
# its phases at rows s, s + 2, ...: the parity of row r's phase is (r // 2) % 2).
ROWS = HEADER + """
N = {N}

@ptxpy.jit
def rows(x: Array[{T}, 2], out: Array[{T}, 2]):
    xs = ptxpy.shared_array((2, N), {T})
    bars = ptxpy.shared_array((2,), u64)
    t = ptxpy.thread_idx.x
    if t == 0:
        ptxpy.mbarrier_init(bars[0], 1)
        ptxpy.mbarrier_init(bars[1], 1)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    count = x.shape[0]
    if t == 0:
        ptxpy.mbarrier_arrive_expect_tx(bars[0], N * {SIZE})
        ptxpy.cp_async_bulk(xs[0, 0:N], x[0, 0:N], bars[0])
    for r in range(count):
        s = r % 2
        if t == 0 and r + 1 < count:
            ptxpy.mbarrier_arrive_expect_tx(bars[1 - s], N * {SIZE})
            ptxpy.cp_async_bulk(xs[1 - s, 0:N], x[r + 1, 0:N], bars[1 - s])
        ptxpy.mbarrier_wait(bars[s], (r // 2) % 2)
        for c in range(t, N, ptxpy.block_dim.x):
            out[r, c] = xs[s, N - 1 - c] + xs[s, c]
        ptxpy.syncthreads()
"""


def rows_source(n: int, t: str = "f32") -> str:
    size = {"f32": 4, "f16": 2, "u8": 1}[t]
    return ROWS.replace("{N}", str(n)).replace("{T}", t).replace("{SIZE}", str(size))


@pytest.mark.parametrize("count", [1, 2, 5])
@pytest.mark.parametrize("n, t, block", [(256, "f32", 128), (64, "f16", 32), (48, "u8", 64)])
def test_rows_through_two_buffers_and_their_phases(count, n, t, block):
    dtype = {"f32": np.float32, "f16": np.float16, "u8": np.uint8}[t]
    rng = np.random.default_rng(count)
    x = (rng.integers(0, 100, (count, n)) if t == "u8" else rng.standard_normal((count, n))).astype(dtype)
    (out,) = run(rows_source(n, t), "rows", [x, Out(x.shape, dtype)], grid=1, block=block,
                 racecheck=True, archs=HOPPER)
    np.testing.assert_array_equal(out, x[:, ::-1] + x)


# A split barrier: every thread stores, arrives, and waits for all 128 arrivals before reading
# what the others stored; sm_80 has these (test_wait), sm_90 waits with try_wait.
ARRIVALS = HEADER + """
@ptxpy.jit
def arrivals(x: Array[f32], out: Array[f32]):
    s = ptxpy.shared_array(128, f32)
    bar = ptxpy.shared_array((1,), u64)
    t = ptxpy.thread_idx.x
    if t == 0:
        ptxpy.mbarrier_init(bar[0], ptxpy.block_dim.x)
    ptxpy.syncthreads()
    base = ptxpy.block_idx.x * 128
    for phase in range(3):
        s[t] = x[base + t] * (phase + 1)
        ptxpy.mbarrier_arrive(bar[0])
        ptxpy.mbarrier_wait(bar[0], phase % 2)
        out[base + t] += s[127 - t]
        ptxpy.syncthreads()
"""


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_thread_arrives_then_waits_for_the_others(arch):
    x = np.random.default_rng(1).standard_normal(256).astype(np.float32)
    (out,) = run(ARRIVALS, "arrivals", [x, Out(x.shape, np.float32)], grid=2, block=128,
                 racecheck=True, arch=arch)
    np.testing.assert_allclose(out, 6 * x.reshape(2, 128)[:, ::-1].reshape(-1), rtol=1e-6)


# A tile computed in shared memory and written out by one bulk store per row.
STORE = HEADER + """
@ptxpy.jit
def store_rows(x: Array[f32, 2], out: Array[f32, 2]):
    s = ptxpy.shared_array((4, 64), f32)
    t = ptxpy.thread_idx.x
    row0 = ptxpy.block_idx.x * 4
    for k in range(4):
        s[k, t] = x[row0 + k, t] * 3.0
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t < 4:
        ptxpy.cp_async_bulk(out[row0 + t, 0:64], s[t, 0:64])
        ptxpy.cp_async_bulk_commit()
        ptxpy.cp_async_bulk_wait(0{READ})
"""


@pytest.mark.parametrize("read", ["", ", read=True"])
def test_bulk_stores_from_shared_to_global(read):
    x = np.random.default_rng(2).standard_normal((12, 64)).astype(np.float32)
    source = STORE.replace("{READ}", read)
    (out,) = run(source, "store_rows", [x, Out(x.shape, np.float32)], grid=3, block=64,
                 racecheck=True, archs=HOPPER)
    np.testing.assert_array_equal(out, x * np.float32(3))


@SIMULATOR_ONLY
def test_a_store_without_its_wait_is_reported():
    source = STORE.replace("        ptxpy.cp_async_bulk_wait(0{READ})\n", "")
    x = np.zeros((4, 64), np.float32)
    with pytest.raises(SimulatorError, match="bulk"):
        run(source, "store_rows", [x, Out(x.shape, np.float32)], grid=1, block=64, archs=HOPPER)


@SIMULATOR_ONLY
def test_a_copy_whose_bytes_the_barrier_does_not_expect_never_lands():
    """expect_tx of fewer bytes than the copy brings: the phase completes early or never;
    here 1024 are expected of a 512-byte copy, so the wait can never finish."""
    source = rows_source(128).replace("N * 4)", "N * 8)")
    x = np.zeros((2, 128), np.float32)
    with pytest.raises(SimulatorError, match="never"):
        run(source, "rows", [x, Out(x.shape, np.float32)], grid=1, block=32, archs=HOPPER)


# --- debug ----------------------------------------------------------------------------------------

CHECKED = HEADER + """
@ptxpy.jit
def shifted(x: Array[f32], out: Array[f32], shift: i32):
    s = ptxpy.shared_array(64, f32)
    bar = ptxpy.shared_array((1,), u64)
    t = ptxpy.thread_idx.x
    if t == 0:
        ptxpy.mbarrier_init(bar[0], 1)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        ptxpy.mbarrier_arrive_expect_tx(bar[0], 128)
        ptxpy.cp_async_bulk(s[0:32], x[shift:shift + 32], bar[0])
    ptxpy.mbarrier_wait(bar[0], 0)
    out[t] = s[t]
"""


@pytest.mark.parametrize("shift", [0, 4, 32])
def test_debug_passes_aligned_slices(shift):
    x = np.arange(64, dtype=np.float32)
    (out,) = run(CHECKED, "shifted", [x, Out(32, np.float32), shift], grid=1, block=32,
                 debug=True, archs=HOPPER)
    np.testing.assert_array_equal(out, x[shift:shift + 32])


@SIMULATOR_ONLY
@pytest.mark.parametrize("shift, message", [
    (1, "misaligned bulk copy of 'x' at byte 4 of it (must be a multiple of 16)"),
    (40, "index out of bounds: index 71 is not in [0, 64) for axis 0 of 'x'"),
])
def test_debug_traps_a_misaligned_or_out_of_bounds_slice(shift, message):
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(SimulatorError) as info:
        run(CHECKED, "shifted", [x, Out(32, np.float32), shift], grid=1, block=32, debug=True,
            archs=HOPPER)
    assert message in str(info.value), info.value


# --- errors --------------------------------------------------------------------------------------

def compile_error(body: str, arch: str = "sm_90") -> str:
    with pytest.raises(CompileError) as info:
        compile_source(HEADER + "\n@ptxpy.jit\ndef k(x: Array[f32], h: Array[f16], y: Array[f32]):\n"
                       "    s = ptxpy.shared_array(64, f32)\n    bars = ptxpy.shared_array(2, u64)\n"
                       "    w = ptxpy.shared_array(2, u32)\n    t = ptxpy.thread_idx.x\n" + body,
                       "k", arch=arch)
    return str(info.value).splitlines()[0]


@pytest.mark.parametrize("body, message", [
    ("    ptxpy.mbarrier_init(w[0], 1)\n",
     "the barrier of ptxpy.mbarrier_init is one element of a shared array of u64"),
    ("    ptxpy.mbarrier_arrive(bars[0:2])\n",
     "the barrier of ptxpy.mbarrier_arrive is one element of a shared array of u64"),
    ("    ptxpy.mbarrier_wait(t, 0)\n",
     "the barrier of ptxpy.mbarrier_wait is an array element or slice"),
    ("    ptxpy.mbarrier_init(bars[0], 0)\n",
     "the count of ptxpy.mbarrier_init is from 1 to 1048575 (an mbarrier counts in 20 bits), got 0"),
    ("    ptxpy.mbarrier_arrive_expect_tx(bars[0], 1 << 20)\n",
     "the bytes of ptxpy.mbarrier_arrive_expect_tx is from 0 to 1048575"),
    ("    ptxpy.mbarrier_wait(bars[0], 0.5)\n",
     "the parity of ptxpy.mbarrier_wait is an integer, got '0.5' of type f32"),
    ("    ptxpy.mbarrier_wait(bars[0])\n", "ptxpy.mbarrier_wait() takes 2 arguments (1 given)"),
    ("    ptxpy.cp_async_bulk(s[0:3], x[0:3], bars[0])\n",
     "ptxpy.cp_async_bulk copies a multiple of 16 bytes (up to 1048575); 3 f32 element(s) are 12"),
    ("    ptxpy.cp_async_bulk(s[0:8], h[0:8], bars[0])\n",
     "ptxpy.cp_async_bulk copies between arrays of one element type: 's' holds f32, 'h' f16"),
    ("    ptxpy.cp_async_bulk(s[0:8], x[0:4], bars[0])\n",
     "ptxpy.cp_async_bulk: the destination has 8 element(s), the source 4"),
    ("    ptxpy.cp_async_bulk(y[0:8], x[0:8], bars[0])\n",
     "ptxpy.cp_async_bulk with a barrier copies from global to shared memory: its destination "
     "'y' is in global memory"),
    ("    ptxpy.cp_async_bulk(s[0:8], x[0:8])\n",
     "ptxpy.cp_async_bulk without a barrier copies from shared to global memory: its destination "
     "'s' is in shared memory"),
    ("    ptxpy.cp_async_bulk(s[0:8], x[0:8], y[0])\n",
     "the barrier of ptxpy.cp_async_bulk is one element of a shared array of u64"),
    ("    ptxpy.cp_async_bulk_wait(8)\n", "ptxpy.cp_async_bulk_wait(n) needs a constant n from 0 to 7"),
    ("    ptxpy.cp_async_bulk_wait(0, read=1)\n", "read= of ptxpy.cp_async_bulk_wait is True or False"),
])
def test_errors(body, message):
    error = compile_error(body)
    line = 10 + body.count("\n")
    assert re.match(rf"kernels\.py:{line}:\d+: error: {re.escape(message)}", error), error


def test_a_barrier_in_global_memory_is_an_error():
    source = HEADER + """
@ptxpy.jit
def k(b: Array[u64]):
    ptxpy.mbarrier_arrive(b[0])
"""
    with pytest.raises(CompileError, match="an mbarrier lives in shared memory: its barrier 'b' "
                                           "is in global memory"):
        compile_source(source, "k")


@pytest.mark.parametrize("body, what", [
    ("    ptxpy.cp_async_bulk(s[0:8], x[0:8], bars[0])\n", "ptxpy.cp_async_bulk needs sm_90 or newer (bulk copies)"),
    ("    ptxpy.cp_async_bulk_commit()\n", "ptxpy.cp_async_bulk_commit needs sm_90 or newer"),
    ("    ptxpy.mbarrier_arrive_expect_tx(bars[0], 16)\n",
     "ptxpy.mbarrier_arrive_expect_tx needs sm_90 or newer (the transaction count of an mbarrier)"),
])
def test_hopper_calls_on_sm_80_are_errors(body, what):
    assert what in compile_error(body, arch="sm_80")


# --- the PTX ---------------------------------------------------------------------------------------

def test_the_ptx_of_barriers_and_bulk_copies():
    ptx = compile_source(rows_source(256), "rows").ptx
    assert re.search(r"mbarrier\.init\.shared\.b64 \[smem_bars\], 1;", ptx), ptx
    assert re.search(r"mbarrier\.arrive\.expect_tx\.shared\.b64 %rd\d+, \[[^\]]+\], 1024;", ptx), ptx
    assert re.search(r"cp\.async\.bulk\.shared::cluster\.global\.mbarrier::complete_tx::bytes "
                     r"\[%r\d+\], \[%rd\d+\], 1024, \[[^\]]+\];", ptx), ptx
    assert re.search(r"(\$\w+):\n\s+mbarrier\.try_wait\.parity\.shared\.b64 (%p\d+), \[[^\]]+\], "
                     r"%r\d+;\n\s+@!\2 bra \1;", ptx), ptx
    assert ".version 8.0" in ptx and ".target sm_90\n" in ptx
    ptx80 = compile_source(ARRIVALS, "arrivals", arch="sm_80").ptx
    assert re.search(r"mbarrier\.arrive\.shared\.b64 %rd\d+, \[[^\]]+\];", ptx80), ptx80
    assert "mbarrier.test_wait.parity.shared.b64" in ptx80 and "try_wait" not in ptx80
    ptx = compile_source(STORE.replace("{READ}", ", read=True"), "store_rows").ptx
    assert re.search(r"cp\.async\.bulk\.global\.shared::cta\.bulk_group \[%rd\d+\], \[%rd?\d+\], 256;", ptx), ptx
    assert "cp.async.bulk.commit_group;" in ptx and "cp.async.bulk.wait_group.read 0;" in ptx
    assemble_all(ARRIVALS, "arrivals")
    assemble_all(CHECKED, "shifted", archs=HOPPER, debug=True)


# --- through JAX --------------------------------------------------------------------------------

@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: x.shape[0], block=64)
def scaled_rows(x: Array[f32, 2], out: Array[f32, 2]):
    s = ptxpy.shared_array(512, f32)
    bar = ptxpy.shared_array((1,), u64)
    t = ptxpy.thread_idx.x
    r = ptxpy.block_idx.x
    if t == 0:
        ptxpy.mbarrier_init(bar[0], 1)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        ptxpy.mbarrier_arrive_expect_tx(bar[0], 2048)
        ptxpy.cp_async_bulk(s[0:512], x[r, 0:512], bar[0])
    ptxpy.mbarrier_wait(bar[0], 0)
    for c in range(t, 512, 64):
        s[c] = s[c] * 2.0
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        ptxpy.cp_async_bulk(out[r, 0:512], s[0:512])
        ptxpy.cp_async_bulk_commit()
        ptxpy.cp_async_bulk_wait(0)


def test_through_jax_eagerly_and_under_jit():
    x = np.random.default_rng(5).standard_normal((6, 512)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(scaled_rows(jnp.asarray(x))), 2 * x)
    jitted = jax.jit(lambda v: scaled_rows(v - 1.0))
    np.testing.assert_array_equal(np.asarray(jitted(jnp.asarray(x))), 2 * (x - np.float32(1)))
