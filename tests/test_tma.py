"""Hopper's tensor copies: `ptxpy.tma_load` and `ptxpy.tma_store` (PTX `cp.async.bulk.tensor`
through a tensor map the launch encodes). Checked against NumPy in the simulator (on the GPU
with PTXPY_TEST_DEVICE=gpu): boxes at the edges (zeros in, nothing out), the swizzles, 3-D
boxes, a two-stage ring; the IR interpreter; the PTX; compile-time and launch errors; a kernel
called through JAX."""
import os
import re
import struct
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ptxpy
from kernel_harness import Out, assemble_all, compile_source, run
from ptxpy import Array, f32, u64
from ptxpy.runtime import ffi, native
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.transpiler import interp
from ptxpy.transpiler.errors import CompileError

ON_GPU = os.environ.get("PTXPY_TEST_DEVICE") == "gpu"
HOPPER = ("sm_90",)

HEADER = """
import ptxpy
from ptxpy import Array, f16, f32, i32, u8, u32, u64
"""

# Block (bx, by) loads the {BM} x {BN} box of x at (by * {BM}, bx * {BN}) (zeros where it
# overhangs x) and writes it whole to out, which has room for every box.
TILES = HEADER + """
@ptxpy.jit
def tiles(x: Array[{T}, 2], out: Array[{T}, 2]):
    tile = ptxpy.shared_array(({BM}, {BN}), {T})
    bar = ptxpy.shared_array((1,), u64)
    t = ptxpy.thread_idx.x
    r0 = ptxpy.block_idx.y * {BM}
    c0 = ptxpy.block_idx.x * {BN}
    if t == 0:
        ptxpy.mbarrier_init(bar[0], 1)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        ptxpy.mbarrier_arrive_expect_tx(bar[0], {BM} * {BN} * {SIZE})
        ptxpy.tma_load(tile, x[r0 + {SHIFT}:r0 + {SHIFT} + {BM}, c0:c0 + {BN}], bar[0])
    ptxpy.mbarrier_wait(bar[0], 0)
    for i in range(t, {BM} * {BN}, ptxpy.block_dim.x):
        out[r0 + i // {BN}, c0 + i % {BN}] = tile[i // {BN}, i % {BN}]
"""

SIZES = {"f32": 4, "f16": 2, "u8": 1}
DTYPES = {"f32": np.float32, "f16": np.float16, "u8": np.uint8, "bf16": jnp.bfloat16}


def tiles_source(bm: int, bn: int, t: str = "f32", shift: int = 0) -> str:
    source = TILES
    for key, value in {"{BM}": bm, "{BN}": bn, "{T}": t, "{SIZE}": SIZES[t], "{SHIFT}": shift}.items():
        source = source.replace(key, str(value))
    return source


def values(shape, t: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if t == "u8":
        return rng.integers(0, 255, shape).astype(np.uint8)
    return rng.standard_normal(shape).astype(DTYPES[t])


def boxes(x: np.ndarray, bm: int, bn: int, shift: int = 0) -> np.ndarray:
    """What the blocks of TILES write: x's boxes with zeros outside x."""
    rows, cols = -(-x.shape[0] // bm), -(-x.shape[1] // bn)
    padded = np.zeros((rows * bm + abs(shift) * 2, cols * bn), x.dtype)
    top = abs(shift)
    padded[top:top + x.shape[0], :x.shape[1]] = x
    return padded[top + shift:top + shift + rows * bm]


@pytest.mark.parametrize("shape, bm, bn, t, shift", [
    ((100, 68), 64, 32, "f32", 0),      # edges on both axes
    ((128, 64), 64, 32, "f32", 0),      # boxes that fit
    ((40, 96), 16, 64, "f16", -3),      # a negative start: zeros above
    ((33, 48), 8, 16, "u8", 2),
])
def test_boxes_at_the_edges_read_zeros(shape, bm, bn, t, shift):
    x = values(shape, t)
    grid = (-(-shape[1] // bn), -(-shape[0] // bm))
    expected = boxes(x, bm, bn, shift)
    (out,) = run(tiles_source(bm, bn, t, shift), "tiles", [x, Out(expected.shape, x.dtype)],
                 grid=grid, block=128, racecheck=True, archs=HOPPER)
    np.testing.assert_array_equal(out, expected)


# The 128-, 64- and 32-byte swizzles: the 16-byte chunk at byte offset b of the tile lies at
# chunk ((b >> 4) ^ (b >> 7)) masked to the swizzle's chunks (8, 4, 2), in its line: with rows
# of `swizzle` bytes, chunk c of row r at c ^ (r * swizzle // 128 % chunks); the kernel reads
# each element where the swizzle put it, so out is x.
SWIZZLED = HEADER + """
@ptxpy.jit
def swizzled(x: Array[f16, 2], out: Array[f16, 2]):
    tile = ptxpy.shared_array((16, {W}), f16)
    bar = ptxpy.shared_array((1,), u64)
    t = ptxpy.thread_idx.x
    r0 = ptxpy.block_idx.x * 16
    if t == 0:
        ptxpy.mbarrier_init(bar[0], 1)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        ptxpy.mbarrier_arrive_expect_tx(bar[0], 16 * {W} * 2)
        ptxpy.tma_load(tile, x[r0:r0 + 16, 0:{W}], bar[0], swizzle={S})
    ptxpy.mbarrier_wait(bar[0], 0)
    for i in range(t, 16 * {W}, ptxpy.block_dim.x):
        r = i // {W}
        c = i % {W}
        chunk = (c // 8) ^ (r * {W} * 2 // 128 % {CHUNKS})
        out[r0 + r, c] = tile[r, chunk * 8 + c % 8]
"""


@pytest.mark.parametrize("swizzle", [128, 64, 32])
def test_the_swizzles_put_each_chunk_where_the_formula_says(swizzle):
    width = swizzle // 2            # one row of the box is `swizzle` bytes of f16
    source = (SWIZZLED.replace("{W}", str(width)).replace("{S}", str(swizzle))
              .replace("{CHUNKS}", str(swizzle // 16)))
    x = values((48, width), "f16", seed=swizzle)
    (out,) = run(source, "swizzled", [x, Out(x.shape, np.float16)], grid=3, block=64,
                 racecheck=True, archs=HOPPER)
    np.testing.assert_array_equal(out, x)


# A box of a 3-D array with one index (box extent 1), into a 2-D tile; stores back through a
# tensor map of out, clipped at out's edges: out = 2 x where the boxes cover it.
STACKED = HEADER + """
@ptxpy.jit
def stacked(x: Array[f32, 3], out: Array[f32, 3]):
    tile = ptxpy.shared_array((32, 8), f32)
    bar = ptxpy.shared_array((1,), u64)
    t = ptxpy.thread_idx.x
    b = ptxpy.block_idx.y
    r0 = ptxpy.block_idx.x * 32
    if t == 0:
        ptxpy.mbarrier_init(bar[0], 1)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        ptxpy.mbarrier_arrive_expect_tx(bar[0], 32 * 8 * 4)
        ptxpy.tma_load(tile, x[b, r0:r0 + 32, 0:8], bar[0])
    ptxpy.mbarrier_wait(bar[0], 0)
    for i in range(t, 32 * 8, ptxpy.block_dim.x):
        tile[i // 8, i % 8] = tile[i // 8, i % 8] * 2.0
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        ptxpy.tma_store(out[b, r0:r0 + 32, 0:8], tile)
        ptxpy.cp_async_bulk_commit()
        ptxpy.cp_async_bulk_wait(0)
"""


def test_a_3d_box_in_and_a_clipped_store_out():
    x = values((3, 50, 8), "f32")
    (out,) = run(STACKED, "stacked", [x, Out(x.shape, np.float32, init=7.0)], grid=(2, 3),
                 block=64, racecheck=True, archs=HOPPER)
    np.testing.assert_array_equal(out, 2 * x)


# A ring of two stages: thread 0 loads step k + 1's box while everyone sums step k's; each
# stage's barrier completes a phase per use (parity (k // 2) % 2). out[r] = sum of row r.
RING = HEADER + """
@ptxpy.jit
def ring(x: Array[f32, 2], out: Array[f32]):
    xs = ptxpy.shared_array((2, 64, 32), f32)
    bars = ptxpy.shared_array((2,), u64)
    t = ptxpy.thread_idx.x
    r0 = ptxpy.block_idx.x * 64
    steps = (x.shape[1] + 31) // 32
    if t == 0:
        ptxpy.mbarrier_init(bars[0], 1)
        ptxpy.mbarrier_init(bars[1], 1)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        ptxpy.mbarrier_arrive_expect_tx(bars[0], 64 * 32 * 4)
        ptxpy.tma_load(xs[0, :, :], x[r0:r0 + 64, 0:32], bars[0])
    total = 0.0
    for k in range(steps):
        s = k % 2
        if t == 0 and k + 1 < steps:
            ptxpy.mbarrier_arrive_expect_tx(bars[1 - s], 64 * 32 * 4)
            ptxpy.tma_load(xs[1 - s], x[r0:r0 + 64, (k + 1) * 32:(k + 1) * 32 + 32], bars[1 - s])
        ptxpy.mbarrier_wait(bars[s], (k // 2) % 2)
        for c in range(32):
            total += xs[s, t, c]
        ptxpy.syncthreads()
    if r0 + t < out.shape[0]:
        out[r0 + t] = total
"""


def test_a_ring_of_two_stages():
    x = values((100, 200), "f32")
    (out,) = run(RING, "ring", [x, Out(100, np.float32)], grid=2, block=64, racecheck=True,
                 archs=HOPPER)
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5, atol=1e-4)


# A warp-specialised wgmma pipeline (the shape of benchmarks/probes/tma_persistent_probe.py):
# warpgroup 1 refills a ring of 2 stages once warpgroup 0's products of the stage are done,
# which warpgroup 0 tells it through the stage's "empty" mbarrier, with no syncthreads.
SPECIALISED = HEADER.replace("u64", "u64, bf16") + """
@ptxpy.jit
def specialised(x: Array[bf16, 2], y: Array[bf16, 2], z: Array[f32, 2]):
    xs = ptxpy.shared_array((2, 64, 64), bf16)
    ys = ptxpy.shared_array((2, 64, 64), bf16)
    full = ptxpy.shared_array((2,), u64)
    empty = ptxpy.shared_array((2,), u64)
    t = ptxpy.thread_idx.x
    steps = x.shape[1] // 64
    if t == 0:
        for s in ptxpy.static_range(2):
            ptxpy.mbarrier_init(full[s], 1)
            ptxpy.mbarrier_init(empty[s], 128)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 128:
        for kt in range(steps):
            s = kt % 2
            if kt >= 2:
                ptxpy.mbarrier_wait(empty[s], (kt // 2 - 1) % 2)
            ptxpy.mbarrier_arrive_expect_tx(full[s], 2 * 64 * 64 * 2)
            ptxpy.tma_load(xs[s], x[0:64, kt * 64:kt * 64 + 64], full[s], swizzle=128)
            ptxpy.tma_load(ys[s], y[kt * 64:kt * 64 + 64, 0:64], full[s], swizzle=128)
    if t < 128:
        acc = ptxpy.local_array((8, 4), f32)
        for kt in range(steps):
            s = kt % 2
            ptxpy.mbarrier_wait(full[s], (kt // 2) % 2)
            ptxpy.wgmma_fence()
            for k in ptxpy.static_range(0, 64, 16):
                a = ptxpy.wgmma_desc(xs[s, 0, k], 128, 16, 1024)
                b = ptxpy.wgmma_desc(ys[s, k, 0], 128, 8192, 1024)
                ptxpy.wgmma(acc, a, b, bf16, trans_b=True, accumulate=kt + k > 0)
            ptxpy.wgmma_commit()
            {RELEASE}
        ptxpy.wgmma_wait(0)
        lane = t % 32
        row = 16 * (t // 32) + lane // 4
        for j in ptxpy.static_range(8):
            col = 8 * j + 2 * (lane % 4)
            z[row, col:col + 2] = (acc[j, 0], acc[j, 1])
            z[row + 8, col:col + 2] = (acc[j, 2], acc[j, 3])
"""
WAITED = """ptxpy.wgmma_wait(0)
            ptxpy.mbarrier_arrive(empty[s])"""


def test_a_warp_specialised_pipeline_hands_stages_back_through_an_mbarrier():
    x, y = values((64, 320), "bf16"), values((320, 64), "bf16")
    (z,) = run(SPECIALISED.replace("{RELEASE}", WAITED), "specialised",
               [x, y, Out((64, 64), np.float32)], grid=1, block=256, archs=HOPPER)
    expected = x.astype(np.float64) @ y.astype(np.float64)
    np.testing.assert_allclose(z, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.skipif(ON_GPU, reason="the simulator's check (a race on the card)")
def test_a_stage_handed_back_before_its_products_are_waited_for_is_an_error():
    early = WAITED.replace("ptxpy.wgmma_wait(0)\n            ptxpy.mbarrier_arrive(empty[s])",
                           "ptxpy.mbarrier_arrive(empty[s])\n            ptxpy.wgmma_wait(0)")
    with pytest.raises(SimulatorError, match="a wgmma of warpgroup 0 .* may still be reading"):
        run(SPECIALISED.replace("{RELEASE}", early), "specialised",
            [values((64, 320), "bf16"), values((320, 64), "bf16"), Out((64, 64), np.float32)],
            grid=1, block=256, archs=HOPPER)


def test_the_ir_interpreter_runs_tensor_copies():
    """One thread through the SSA (transpiler/interp.py): a 3-D box in, doubled, stored back."""
    func = compile_function(STACKED, "stacked")
    x = values((3, 50, 8), "f32")
    out = np.full(x.shape, 7.0, np.float32)
    for b in range(3):
        for bx in range(2):
            interp.run_function(func, {"x": x, "out": out}, {"tid.x": 0, "ntid.x": 1,
                                                            "ctaid.x": bx, "ctaid.y": b},
                                lone_thread=True)
    np.testing.assert_array_equal(out, 2 * x)


def compile_function(source: str, name: str):
    from ptxpy.transpiler import driver

    program = driver.parse(source, "kernels.py")
    return driver.compile_kernel(program, name, None, frozenset(),
                                 driver.Options("sm_90", False, False)).ssa


# --- debug ----------------------------------------------------------------------------------------

CHECKED = HEADER + """
@ptxpy.jit
def shifted(x: Array[f32, 2], out: Array[f32, 2], shift: i32):
    tile = ptxpy.shared_array((4, 8), f32)
    bar = ptxpy.shared_array((1,), u64)
    t = ptxpy.thread_idx.x
    if t == 0:
        ptxpy.mbarrier_init(bar[0], 1)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        ptxpy.mbarrier_arrive_expect_tx(bar[0], 128)
        ptxpy.tma_load(tile, x[0:4, shift:shift + 8], bar[0])
    ptxpy.mbarrier_wait(bar[0], 0)
    out[t // 8, t % 8] = tile[t // 8, t % 8]
"""


@pytest.mark.parametrize("shift", [0, 4, -4, 16])
def test_debug_passes_boxes_whose_rows_start_on_16_bytes(shift):
    x = np.arange(64, dtype=np.float32).reshape(4, 16)
    (out,) = run(CHECKED, "shifted", [x, Out((4, 8), np.float32), shift], grid=1, block=32,
                 debug=True, archs=HOPPER)
    padded = np.concatenate([np.zeros((4, 8), np.float32), x, np.zeros((4, 16), np.float32)], 1)
    np.testing.assert_array_equal(out, padded[:, 8 + shift:16 + shift])


@pytest.mark.skipif(ON_GPU, reason="the simulator reports the trap's message")
def test_debug_traps_a_box_whose_rows_start_off_16_bytes():
    x = np.arange(64, dtype=np.float32).reshape(4, 16)
    with pytest.raises(SimulatorError, match="a box of 'x' whose rows start at element 2, not on "
                                             r"a 16-byte boundary \(a multiple of 4\)"):
        run(CHECKED, "shifted", [x, Out((4, 8), np.float32), 2], grid=1, block=32, debug=True,
            archs=HOPPER)


STORED = HEADER + """
@ptxpy.jit
def stored(x: Array[f32, 2], out: Array[f32, 2], shift: i32):
    tile = ptxpy.shared_array((4, 8), f32)
    t = ptxpy.thread_idx.x
    tile[t // 8, t % 8] = x[t // 8, t % 8]
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        ptxpy.tma_store(out[shift:shift + 4, 0:8], tile)
        ptxpy.cp_async_bulk_commit()
        ptxpy.cp_async_bulk_wait(0)
"""


@pytest.mark.parametrize("shift", [0, 2, 6])
def test_a_store_clips_its_box_at_the_end(shift):
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    (out,) = run(STORED, "stored", [x, Out((6, 8), np.float32, init=-1.0), shift], grid=1,
                 block=32, debug=True, archs=HOPPER)
    expected = np.full((6, 8), -1.0, np.float32)
    expected[shift:shift + 4] = x[:6 - shift]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.skipif(ON_GPU, reason="the simulator reports the trap's message")
def test_debug_traps_a_store_that_starts_before_the_array():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    with pytest.raises(SimulatorError, match="ptxpy.tma_store of a box of 'out' starting at -1 "
                                             "on axis 0"):
        run(STORED, "stored", [x, Out((6, 8), np.float32), -1], grid=1, block=32, debug=True,
            archs=HOPPER)


# --- the PTX ---------------------------------------------------------------------------------------

def test_the_ptx_of_tensor_copies():
    kernel = compile_source(STACKED, "stacked")
    ptx = kernel.ptx
    assert "    .param .align 64 .b8 stacked_x_tmap0[128],\n" in ptx, ptx
    assert "    .param .align 64 .b8 stacked_out_tmap0[128]\n" in ptx, ptx
    assert re.search(r"mov\.b64 (%rd\d+), stacked_x_tmap0;\n\s+cvta\.param\.u64 \1, \1;", ptx), ptx
    assert re.search(r"cp\.async\.bulk\.tensor\.3d\.shared::cluster\.global\.tile\.mbarrier::"
                     r"complete_tx::bytes \[smem_tile\], \[%rd\d+, \{0, %r\d+, %r\d+\}\], "
                     r"\[smem_bar\];", ptx), ptx
    assert re.search(r"cp\.async\.bulk\.tensor\.3d\.global\.shared::cta\.tile\.bulk_group "
                     r"\[%rd\d+, \{0, %r\d+, %r\d+\}\], \[smem_tile\];", ptx), ptx
    assert ".shared .align 128 .b8 smem_tile[1024];" in ptx, ptx
    specs = {spec.name: spec.tensor_maps for spec in kernel.params}
    assert specs == {"x": (((1, 32, 8), 0),), "out": (((1, 32, 8), 0),)}
    swizzled = compile_source(SWIZZLED.replace("{W}", "64").replace("{S}", "128")
                              .replace("{CHUNKS}", "8"), "swizzled").ptx
    assert ".shared .align 1024 .b8 smem_tile[2048];" in swizzled, swizzled
    # the coordinates, innermost first: {c0, r0}
    assert re.search(r"\[%rd\d+, \{0, %r\d+\}\]", swizzled), swizzled
    assemble_all(STACKED, "stacked", archs=("sm_90", "sm_90a"))
    assemble_all(RING, "ring", archs=("sm_90",))


def test_one_map_per_box_and_swizzle():
    source = HEADER + """
@ptxpy.jit
def maps(x: Array[f32, 2], out: Array[f32]):
    a = ptxpy.shared_array((8, 32), f32)
    b = ptxpy.shared_array((2, 4, 32), f32)
    bar = ptxpy.shared_array((1,), u64)
    ptxpy.tma_load(a, x[0:8, 0:32], bar[0])
    ptxpy.tma_load(a, x[8:16, 32:64], bar[0])
    ptxpy.tma_load(b[1], x[0:4, 0:32], bar[0])
    ptxpy.tma_load(a, x[0:8, 0:32], bar[0], swizzle=128)
"""
    kernel = compile_source(source, "maps")
    (x,) = [spec for spec in kernel.params if spec.name == "x"]
    assert x.tensor_maps == (((8, 32), 0), ((4, 32), 0), ((8, 32), 128))
    assert [name for name, _ in x.ptx_params("maps")] == [
        "maps_x", "maps_x_shape0", "maps_x_shape1", "maps_x_tmap0", "maps_x_tmap1", "maps_x_tmap2"]


# --- errors ----------------------------------------------------------------------------------------

def compile_error(body: str, arch: str = "sm_90") -> str:
    with pytest.raises(CompileError) as info:
        compile_source(HEADER + "\n@ptxpy.jit\ndef k(x: Array[f32, 2], h: Array[f16, 2], y: Array[f32]):\n"
                       "    s = ptxpy.shared_array((64, 32), f32)\n"
                       "    s3 = ptxpy.shared_array((3, 8, 8), f32)\n"
                       "    bars = ptxpy.shared_array(2, u64)\n    t = ptxpy.thread_idx.x\n" + body,
                       "k", arch=arch)
    return str(info.value).splitlines()[0]


@pytest.mark.parametrize("body, message", [
    ("    ptxpy.tma_load(s, x[0:64, t:t + 32], bars[0], swizzle=48)\n",
     "swizzle= of ptxpy.tma_load is 0, 32, 64 or 128 (bytes), got 48"),
    ("    ptxpy.tma_load(s, s[0:64, 0:32], bars[0])\n",
     "the tensor of ptxpy.tma_load is a box of an array parameter, x[r:r + 64, k:k + 64], got 's[0:64, 0:32]'"),
    ("    ptxpy.tma_load(s, x[0:64], bars[0])\n",
     "the box of ptxpy.tma_load slices or indexes each of the 2 dimension(s) of 'x'"),
    ("    ptxpy.tma_load(s, x[0:t, 0:32], bars[0])\n", "the width of a vector access"),
    ("    ptxpy.tma_load(s, x[0:300, 0:32], bars[0])\n",
     "the box of ptxpy.tma_load is 1 to 256 elements wide in each dimension, got 300"),
    ("    ptxpy.tma_load(s, x[0:64, 0:30], bars[0])\n",
     "the rows of the box of ptxpy.tma_load are a multiple of 16 bytes; 30 f32 element(s) are 120"),
    ("    ptxpy.tma_load(s, x[0:64, 0:32], bars[0], swizzle=64)\n",
     "with swizzle=64 the rows of the box of ptxpy.tma_load are 64 bytes; 32 f32 element(s) "
     "are 128"),
    ("    ptxpy.tma_load(s[0:64, 0:8], x[0:64, 0:8], bars[0], swizzle=64)\n",
     "with swizzle=64 the rows of the box of ptxpy.tma_load are 64 bytes; 8 f32 element(s) "
     "are 32"),
    ("    ptxpy.tma_load(s, h[0:64, 0:32], bars[0])\n",
     "ptxpy.tma_load copies between arrays of one element type: 'h' holds f16, 's' f32"),
    ("    ptxpy.tma_load(s[0:64, 0:32], x[0:64, 0:32], y[0])\n",
     "the barrier of ptxpy.tma_load is one element of a shared array of u64"),
    ("    ptxpy.tma_load(s[0:32, :], x[0:64, 0:32], bars[0])\n",
     "ptxpy.tma_load copies a box of a global array into shared memory: its tile takes the "
     "trailing dimensions of 's' whole; 0:32 of an extent of 64 is part of one"),
    ("    ptxpy.tma_load(s[1:64, :], x[0:64, 0:32], bars[0])\n",
     "the tile of ptxpy.tma_load takes its trailing dimensions whole (':' or '0:N'), got '1:64'"),
    ("    ptxpy.tma_load(s[0, 0], x[0:64, 0:32], bars[0])\n",
     "the tile of ptxpy.tma_load is a block of elements"),
    ("    ptxpy.tma_load(s, x[0:32, 0:32], bars[0])\n",
     "ptxpy.tma_load copies a box of a global array into shared memory: the tile (64, 32) and "
     "the box (32, 32) differ in shape"),
    ("    ptxpy.tma_load(s3[t, :, 0], x[0:8, 0:8], bars[0])\n",
     "the tile of ptxpy.tma_load indexes leading dimensions and takes the rest whole"),
    ("    ptxpy.tma_store(x[0:64, 0:32], y)\n",
     "ptxpy.tma_store copies a tile of shared memory into a box of a global array: its tile 'y' "
     "is in global memory"),
    ("    ptxpy.tma_store(s, x[0:64, 0:32])\n",
     "the tensor of ptxpy.tma_store is a box of an array parameter"),
])
def test_errors(body, message):
    error = compile_error(body)
    line = 10 + body.count("\n")
    assert re.match(rf"kernels\.py:{line}:\d+: error: {re.escape(message)}", error), error


def test_a_tile_that_puts_the_next_off_its_boundary_is_an_error():
    body = ("    odd = ptxpy.shared_array((3, 4, 4), f32)\n"
            "    ptxpy.tma_load(odd[t], x[0:4, 0:4], bars[0])\n")
    assert ("ptxpy.tma_load copies a box of a global array into shared memory: each tile of 'odd' "
            "is 64 bytes, which puts the next one off the 128-byte boundary a tensor copy needs"
            in compile_error(body))


# A device function that loads a box: its tensor map belongs to the kernel's parameter the
# call binds (here two calls, one box); the kernel's out = the rows of x, stage by stage.
IN_A_FUNCTION = HEADER + """
@ptxpy.func
def load(tile: Array[f32, 3], x: Array[f32, 2], bars: Array[u64], s: i32, r0: i32):
    ptxpy.mbarrier_arrive_expect_tx(bars[s], 8 * 32 * 4)
    ptxpy.tma_load(tile[s], x[r0:r0 + 8, 0:32], bars[s])

@ptxpy.jit
def staged(x: Array[f32, 2], out: Array[f32, 2]):
    tiles = ptxpy.shared_array((2, 8, 32), f32)
    bars = ptxpy.shared_array(2, u64)
    t = ptxpy.thread_idx.x
    if t == 0:
        ptxpy.mbarrier_init(bars[0], 1)
        ptxpy.mbarrier_init(bars[1], 1)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        load(tiles, x, bars, 0, 0)
        load(tiles, x, bars, 1, 8)
    for s in range(2):
        ptxpy.mbarrier_wait(bars[s], 0)
        for c in range(32):
            out[8 * s + t, c] = tiles[s, t, c]
"""


def test_a_device_function_copies_through_its_callers_map():
    kernel = compile_source(IN_A_FUNCTION, "staged")
    assert {spec.name: spec.tensor_maps for spec in kernel.params} == {
        "x": (((8, 32), 0),), "out": ()}
    x = values((16, 32), "f32")
    (out,) = run(IN_A_FUNCTION, "staged", [x, Out((16, 32), np.float32)], grid=1, block=8,
                 racecheck=True, archs=HOPPER)
    np.testing.assert_array_equal(out, x)


def test_a_device_function_given_a_shared_array_for_its_tensor_is_an_error():
    source = IN_A_FUNCTION.replace("load(tiles, x, bars, 1, 8)",
                                   "load(tiles, tiles[0], bars, 1, 8)").replace(
        "tiles = ptxpy.shared_array((2, 8, 32), f32)",
        "tiles = ptxpy.shared_array((2, 8, 32), f32)\n    other = ptxpy.shared_array((8, 32), f32)"
    ).replace("load(tiles, tiles[0], bars, 1, 8)", "load(tiles, other, bars, 1, 8)")
    with pytest.raises(CompileError, match=r"load\(\) copies boxes of its parameter 'x' through a "
                                           r"tensor map \(ptxpy.tma_load/tma_store\): pass it an "
                                           r"array parameter of the kernel, not 'other'"):
        compile_source(source, "staged")


def test_tensor_copies_on_sm_80_are_an_error():
    assert ("ptxpy.tma_load needs sm_90 or newer (tensor copies)"
            in compile_error("    ptxpy.tma_load(s, x[0:64, 0:32], bars[0])\n", arch="sm_80"))


# --- through JAX --------------------------------------------------------------------------------

@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: ((x.shape[1] + 31) // 32, (x.shape[0] + 63) // 64),
           block=128)
def doubled(x: Array[f32, 2], out: Array[f32, 2]):
    tile = ptxpy.shared_array((64, 32), f32)
    bar = ptxpy.shared_array((1,), u64)
    t = ptxpy.thread_idx.x
    r0 = ptxpy.block_idx.y * 64
    c0 = ptxpy.block_idx.x * 32
    if t == 0:
        ptxpy.mbarrier_init(bar[0], 1)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        ptxpy.mbarrier_arrive_expect_tx(bar[0], 64 * 32 * 4)
        ptxpy.tma_load(tile, x[r0:r0 + 64, c0:c0 + 32], bar[0])
    ptxpy.mbarrier_wait(bar[0], 0)
    for i in range(t, 64 * 32, 128):
        tile[i // 32, i % 32] = tile[i // 32, i % 32] * 2.0
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        ptxpy.tma_store(out[r0:r0 + 64, c0:c0 + 32], tile)
        ptxpy.cp_async_bulk_commit()
        ptxpy.cp_async_bulk_wait(0)


def test_through_jax_eagerly_under_jit_and_vmap():
    x = values((100, 72), "f32", seed=3)
    np.testing.assert_array_equal(np.asarray(doubled(jnp.asarray(x))), 2 * x)
    jitted = jax.jit(lambda v: doubled(v - 1.0))
    np.testing.assert_array_equal(np.asarray(jitted(jnp.asarray(x))), 2 * (x - np.float32(1)))
    # new buffers each call: each gets its own tensor map
    for shift in range(3):
        y = jnp.asarray(x[:, :64]) + shift
        np.testing.assert_array_equal(np.asarray(doubled(y)), 2 * np.asarray(y))
    stacked = jnp.asarray(np.stack([x, -x]))
    np.testing.assert_array_equal(np.asarray(jax.vmap(doubled)(stacked)), 2 * np.asarray(stacked))


def _has_hopper() -> bool:
    try:
        return any(float(d.compute_capability) >= 9.0 for d in jax.devices("gpu"))
    except RuntimeError:
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _has_hopper(), reason="no sm_90 GPU visible to JAX")
def test_a_tma_kernel_launches_and_updates_its_maps_in_c_on_a_gpu():
    if native.library() is None:
        pytest.skip("no C handler (no C compiler, or PTXPY_NATIVE_HANDLER=0)")
    x = np.arange(100 * 72, dtype=np.float32).reshape(100, 72)
    np.testing.assert_array_equal(np.asarray(doubled(jnp.asarray(x))), 2 * x)  # via Python
    launches, updates, fallbacks = native.counters()
    for shift in range(3):          # new buffers each call: a map encoded for each
        y = jnp.asarray(x) + shift
        np.testing.assert_array_equal(np.asarray(doubled(y)), 2 * np.asarray(y))
    assert native.counters()[0] - launches == 3 and native.counters()[2] == fallbacks
    step = jax.jit(lambda v: doubled(doubled(doubled(doubled(
        doubled(v) - 1.0)))))      # XLA makes CUDA graphs of 5 ops or more
    y = expected = jnp.asarray(x[:64, :64] % 7)      # exact in f32 after 4 steps
    for _ in range(4):                  # keeping y while the next step runs moves the buffers
        y = step(y)
        expected = (np.asarray(expected) * 2 - 1) * 16
    np.testing.assert_array_equal(np.asarray(y), expected)
    if ffi.recording_registered:
        assert native.counters()[1] > updates


def test_a_launch_whose_rows_a_map_cannot_describe_is_an_error():
    x = jnp.ones((64, 33), jnp.float32)      # rows of 132 bytes
    with pytest.raises(ValueError, match=r"kernel 'doubled', parameter 'x': the kernel copies "
                                         r"\(64, 32\) boxes of it through a tensor map "
                                         r"\(ptxpy.tma_load/tma_store\), and the rows of a tensor "
                                         r"map are a multiple of 16 bytes apart: shape \(64, 33\)"):
        doubled(x)


def test_emit_typed_and_ssa_show_the_box_and_the_map(tmp_path, capsys):
    from ptxpy.cli import main

    path = tmp_path / "kernels.py"
    path.write_text(RING)
    assert main(["transpile", str(path), "--emit", "typed"]) == 0
    typed_text = capsys.readouterr().out
    assert "tma_load(tensor=x[r0:i32 : +64, 0:i32 : +32], tile=xs[0:i32, :, :], swizzle=0" in typed_text
    assert main(["transpile", str(path), "--emit", "ssa"]) == 0
    ssa_text = capsys.readouterr().out
    assert re.search(r"%\d+:i64 = tensor_map name=ring_x_tmap0", ssa_text), ssa_text
    assert re.search(r"tma_load bytes=8192 space=shared %\d+, %\d+, %\d+, %\d+, %\d+", ssa_text)


# --- the launch's parameter block (no GPU: the encoder is a stand-in) ----------------------------

class FakeLayout(NamedTuple):
    """A tensor map layout whose encoding is its pointer, repeated: what `fill` writes; the
    driver's arguments (for the C handler) are those of `layout`."""
    name: str
    layout: object

    def encode(self, pointer: int) -> bytes:
        ENCODED.append((self.name, pointer))
        return struct.pack("<Q", pointer) * 16

    def arguments(self):
        return self.layout.arguments()


ENCODED: list = []


def test_the_parameter_block_places_maps_on_64_bytes_and_fills_them_per_pointer():
    from ptxpy.runtime import ffi
    from ptxpy.runtime import launch as launch_mod

    kernel = compile_source(STACKED, "stacked")
    inputs, outputs = launch_mod.split_params(kernel, 1)
    x = jnp.zeros((3, 50, 8), jnp.float32)
    values = launch_mod.check_args(kernel, inputs, [x])
    outs = launch_mod.check_out_types(kernel, outputs, [jax.ShapeDtypeStruct((3, 50, 8), jnp.float32)])
    _, slots, params, offsets = launch_mod.pack(kernel, inputs, values, outputs, outs)
    maps = [slot for slot in slots if isinstance(slot, launch_mod.TensorSlot)]
    # x, its 3 extents, its map; out, its 3 extents, its map
    assert offsets == [0, 8, 12, 16, 64, 192, 200, 204, 208, 256]
    assert [(slot.offset, slot.index) for slot in maps] == [(64, 0), (256, 1)]
    assert maps[0].layout.shape == (3, 50, 8) and maps[0].layout.box == (1, 32, 8)
    assert maps[0].layout.strides() == [32, 1600] and maps[0].layout.problem() is None
    assert len(params) == 384
    plan = ffi.LaunchPlan("stacked", None, (2, 3, 1), (64, 1, 1), 0, params, offsets,
                          [s for s in slots if not isinstance(s, launch_mod.TensorSlot)],
                          tensor_slots=[launch_mod.TensorSlot(m.offset, m.index,
                                                              FakeLayout(str(k), m.layout))
                                        for k, m in enumerate(maps)])
    plan.make_native()      # the C handler encodes the maps itself (tests/test_native_handler.py)
    native_maps = plan.native.maps[:plan.native.num_maps]
    assert [(m.offset, m.index, tuple(m.dims[:m.rank]), tuple(m.box[:m.rank]))
            for m in native_maps] == [(64, 0, (8, 50, 3), (8, 32, 1)),
                                      (256, 1, (8, 50, 3), (8, 32, 1))]
    ENCODED.clear()
    for pointers in ([0x1000, 0x2000], [0x1000, 0x2000], [0x3000, 0x2000]):
        with plan.locked():
            plan.fill(pointers)
        block = bytes(plan._buffer)[:len(params)]
        assert block[0:8] == struct.pack("<Q", pointers[0])
        assert block[64:192] == struct.pack("<Q", pointers[0]) * 16
        assert block[256:384] == struct.pack("<Q", pointers[1]) * 16
    # each pointer a slot sees is encoded once
    assert ENCODED == [("0", 0x1000), ("1", 0x2000), ("0", 0x3000)]
