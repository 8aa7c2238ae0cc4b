"""Shared arrays past CUDA's 48 KB static limit: laid out in one `.extern .shared` array and
asked for as dynamic shared memory at launch (CUDA's `extern __shared__` with the opt-in
attribute), up to the target's limit. Checked in the simulator (on the GPU with
PTXPY_TEST_DEVICE=gpu) and through JAX (the simulator without a GPU, the card with one)."""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ptxpy
from kernel_harness import Out, compile_source, run
from ptxpy import Array, f32
from ptxpy.transpiler.errors import CompileError

REVERSE = """
import ptxpy
from ptxpy import Array, f32, f64, i32

N = {n}

@ptxpy.func
def spread(t: i32) -> f32:
    pad = ptxpy.shared_array({pad}, f64)       # a device function's shared array counts too
    pad[t] = f64(t) * 0.5
    ptxpy.syncthreads()
    return f32(pad[255 - t])

@ptxpy.jit
def reverse_big(x: Array[f32], out: Array[f32]):
    tile = ptxpy.shared_array(N, f32)
    small = ptxpy.shared_array(256, i32)
    t = ptxpy.thread_idx.x
    for k in range(t, N, ptxpy.block_dim.x):
        tile[k] = x[k]
    small[t] = t
    half = spread(t)
    ptxpy.syncthreads()
    for k in range(t, N, ptxpy.block_dim.x):
        out[k] = tile[N - 1 - k] + f32(small[255 - t]) + half
"""


def expected_reverse(x: np.ndarray) -> np.ndarray:
    n, threads = len(x), 256
    owner = np.arange(n) % threads
    half = ((255 - owner) * 0.5).astype(np.float32)
    return (x[::-1] + (255 - owner).astype(np.float32)) + half


@pytest.mark.parametrize("n, pad, dynamic", [(16384, 256, 65536 + 1024 + 2048),     # 67 KB
                                             (38912, 1024, 155648 + 1024 + 8192),   # 161 KB
                                             (8192, 256, 0)])                        # 35 KB
def test_a_block_with_more_than_48_kb_of_shared_arrays(n, pad, dynamic):
    source = REVERSE.format(n=n, pad=pad)
    kernel = compile_source(source, "reverse_big")
    assert kernel.options.get("dynamic_shared_bytes", 0) == dynamic
    if dynamic:
        assert ".extern .shared .align 16 .b8 smem[];" in kernel.ptx
        assert not re.search(r"\.shared \.align \d+ \.b8 smem_", kernel.ptx)
        if n == 16384:   # `small` lies after the 64 KB tile
            assert re.search(r"mov\.u32 %r\d+, smem\+65536;", kernel.ptx)
        assert kernel.shared_bytes == 0
    else:
        assert ".extern" not in kernel.ptx and ".shared .align 16 .b8 smem_tile[32768];" in kernel.ptx
        assert kernel.shared_bytes == 32768 + 1024 + 2048
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    (out,) = run(source, "reverse_big", [x, Out(n, np.float32)], grid=1, block=256)
    np.testing.assert_array_equal(out, expected_reverse(x))


def test_each_target_has_its_own_limit():
    source = REVERSE.format(n=24576, pad=256)           # 96 KB + 3 KB = 99 KB: every target
    for arch in ("sm_80", "sm_86", "sm_89", "sm_90"):
        assert compile_source(source, "reverse_big", arch=arch).options["dynamic_shared_bytes"] == 101376
    source = REVERSE.format(n=25600, pad=256)           # 100 KB + 3 KB
    assert compile_source(source, "reverse_big", arch="sm_80").options["dynamic_shared_bytes"] == 105472
    for arch in ("sm_86", "sm_89"):
        with pytest.raises(CompileError, match=f"shared arrays take 105472 bytes; {arch} gives a block "
                                               r"at most 101376 \(99 KB\)"):
            compile_source(source, "reverse_big", arch=arch)
    source = REVERSE.format(n=43008, pad=256)           # 168 KB + 3 KB: sm_90 only
    compile_source(source, "reverse_big", arch="sm_90")
    with pytest.raises(CompileError, match=r"sm_80 gives a block at most 166912 \(163 KB\)") as info:
        compile_source(source, "reverse_big", arch="sm_80")
    # located at the declaration that goes past the target's limit (the kernel's own tile)
    assert str(info.value).splitlines()[1] == "    tile = ptxpy.shared_array(N, f32)"


def test_past_every_target_s_limit_is_an_error_at_the_declaration():
    source = REVERSE.format(n=60000, pad=256)
    with pytest.raises(CompileError) as info:
        compile_source(source, "reverse_big")
    assert ("shared arrays take 240000 bytes; no target gives a block more than 232448 (227 KB, "
            "sm_90)") in str(info.value)
    assert "tile = ptxpy.shared_array(N, f32)" in str(info.value)


TILE = 20480      # 80 KB of f32


@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: x.shape[0] // TILE, block=512)
def flip_tiles(x: Array[f32], out: Array[f32]):
    tile = ptxpy.shared_array(TILE, f32)
    base = ptxpy.block_idx.x * TILE
    t = ptxpy.thread_idx.x
    for k in range(t, TILE, 512):
        tile[k] = x[base + k]
    ptxpy.syncthreads()
    for k in range(t, TILE, 512):
        out[base + k] = tile[TILE - 1 - k] * 2.0


def test_through_jax_eager_and_jitted():
    x = np.random.default_rng(3).standard_normal(3 * TILE).astype(np.float32)
    expected = (x.reshape(3, TILE)[:, ::-1] * 2).reshape(-1)
    np.testing.assert_array_equal(np.asarray(flip_tiles(jnp.asarray(x))), expected)
    chained = jax.jit(lambda v: flip_tiles(flip_tiles(v) + 1.0))
    np.testing.assert_array_equal(np.asarray(chained(jnp.asarray(x))),
                                  (x.reshape(3, TILE) * 4 + 2).reshape(-1))
    assert ".extern .shared" in flip_tiles.ptx(jnp.asarray(x))


def test_a_kernel_named_like_the_extern_array():
    source = """
import ptxpy
from ptxpy import Array, f32

@ptxpy.jit
def smem(x: Array[f32], out: Array[f32]):
    big = ptxpy.shared_array(16384, f32)
    t = ptxpy.thread_idx.x
    big[16383 - t] = x[t]
    ptxpy.syncthreads()
    out[t] = big[16383 - t] * 3.0
"""
    kernel = compile_source(source, "smem")
    assert ".extern .shared .align 16 .b8 smem$[];" in kernel.ptx and ".entry smem(" in kernel.ptx
    x = np.arange(64, dtype=np.float32)
    (out,) = run(source, "smem", [x, Out(64, np.float32)], grid=1, block=64)
    np.testing.assert_array_equal(out, x * 3)
