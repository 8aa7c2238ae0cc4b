"""`ptxpy.mma_sync`: a warp's tensor-core product D = A B + C (PTX `mma.sync`), m16n8k8 with
tf32 operands and m16n8k16 with f16 or bf16 ones, f32 accumulators. Checked against NumPy in
the simulator (on the GPU with PTXPY_TEST_DEVICE=gpu): each warp of the launch multiplies its
own tile, with the fragments laid out as docs/language.md gives them."""
from pathlib import Path

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import ptxpy

from kernel_harness import Out, compile_source, run
from ptxpy import Array, f32
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.transpiler.errors import CompileError

HEADER = """
import ptxpy
from ptxpy import Array, bf16, f16, f32, f64, i32
"""

# Each warp w multiplies tile w: a[w] (16 x K), b[w] (K x 8), c[w] (16 x 8) -> d[w]. The tf32
# kernel is also called through JAX (its block: 32 threads per tile, or 80 for 3 tiles to show
# the check before launch); the harness compiles its source.
@ptxpy.jit(out_shape=lambda a, b, c: c, grid=1, block=lambda a, b, c: {2: 64, 3: 80}[a.shape[0]])
def tiles_tf32(a: Array[f32, 3], b: Array[f32, 3], c: Array[f32, 3], d: Array[f32, 3]):
    w = ptxpy.global_id() // 32
    lane = ptxpy.lane_id()
    g = lane // 4
    t = lane % 4
    d0, d1, d2, d3 = ptxpy.mma_sync(
        (a[w, g, t], a[w, g + 8, t], a[w, g, t + 4], a[w, g + 8, t + 4]),
        (b[w, t, g], b[w, t + 4, g]),
        (c[w, g, 2 * t], c[w, g, 2 * t + 1], c[w, g + 8, 2 * t], c[w, g + 8, 2 * t + 1]))
    d[w, g, 2 * t:2 * t + 2] = (d0, d1)
    d[w, g + 8, 2 * t:2 * t + 2] = (d2, d3)


def _source_of(name: str) -> str:
    """A kernel of this file as source for the harness (with a plain @ptxpy.jit)."""
    text = Path(__file__).read_text()
    start = text.index(f"def {name}(")
    return HEADER + "\n@ptxpy.jit\n" + text[start:text.index("\n\n\n", start)] + "\n"


TF32 = _source_of("tiles_tf32")

HALF = HEADER + """
@ptxpy.jit
def tiles_{T}(a: Array[{T}, 3], b: Array[{T}, 3], c: Array[f32, 3], d: Array[f32, 3]):
    w = ptxpy.global_id() // 32
    lane = ptxpy.lane_id()
    g = lane // 4
    t = lane % 4
    a0, a1 = a[w, g, 2 * t:2 * t + 2]
    a2, a3 = a[w, g + 8, 2 * t:2 * t + 2]
    a4, a5 = a[w, g, 2 * t + 8:2 * t + 10]
    a6, a7 = a[w, g + 8, 2 * t + 8:2 * t + 10]
    d0, d1, d2, d3 = ptxpy.mma_sync(
        (a0, a1, a2, a3, a4, a5, a6, a7),
        (b[w, 2 * t, g], b[w, 2 * t + 1, g], b[w, 2 * t + 8, g], b[w, 2 * t + 9, g]),
        (c[w, g, 2 * t], c[w, g, 2 * t + 1], c[w, g + 8, 2 * t], c[w, g + 8, 2 * t + 1]))
    d[w, g, 2 * t:2 * t + 2] = (d0, d1)
    d[w, g + 8, 2 * t:2 * t + 2] = (d2, d3)
"""

HALF_TYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


def tiles(kind: str, warps: int, rng, integers: bool):
    """Inputs for `warps` tiles: small integers (every product and sum exact) or normals."""
    k = 8 if kind == "tf32" else 16
    dtype = np.float32 if kind == "tf32" else HALF_TYPES[kind]
    draw = ((lambda shape: rng.integers(-8, 9, shape)) if integers
            else (lambda shape: rng.standard_normal(shape)))
    return (draw((warps, 16, k)).astype(dtype), draw((warps, k, 8)).astype(dtype),
            draw((warps, 16, 8)).astype(np.float32))


def launch(kind: str, a, b, c, block: int):
    source, name = (TF32, "tiles_tf32") if kind == "tf32" else (HALF.replace("{T}", kind), f"tiles_{kind}")
    warps = a.shape[0]
    (d,) = run(source, name, [a, b, c, Out(c.shape, np.float32)], warps * 32 // block, block)
    return d


def tf32(x):
    """f32 values rounded to tf32 as cvt.rna.tf32.f32 does: 10 fraction bits, ties away."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


@pytest.mark.parametrize("kind", ["tf32", "f16", "bf16"])
@pytest.mark.parametrize("warps, block", [(1, 32), (4, 64), (6, 96)])
def test_exact_products_of_small_integers(kind, warps, block):
    a, b, c = tiles(kind, warps, np.random.default_rng(warps), integers=True)
    expected = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_array_equal(launch(kind, a, b, c, block), expected.astype(np.float32))


@pytest.mark.parametrize("kind", ["tf32", "f16", "bf16"])
def test_random_tiles_match_numpy_within_the_accumulation_error(kind):
    a, b, c = tiles(kind, 4, np.random.default_rng(7), integers=False)
    a64, b64 = (tf32(a) if kind == "tf32" else a).astype(np.float64), \
        (tf32(b) if kind == "tf32" else b).astype(np.float64)
    expected = a64 @ b64 + c
    scale = np.abs(a64) @ np.abs(b64) + np.abs(c)
    got = launch(kind, a, b, c, 128)
    assert np.all(np.abs(got - expected) <= 2.0 ** -20 * scale + 1e-30)


def test_tf32_operands_are_rounded_to_nearest_ties_away():
    one_and_half_step = np.float32(1 + 2.0 ** -11)          # halfway between two tf32 values
    below_half = np.float32(1 + 2.0 ** -11 - 2.0 ** -23)
    a = np.zeros((1, 16, 8), np.float32)
    a[0, :4, 0] = [one_and_half_step, -one_and_half_step, below_half, 3.0]
    b = np.zeros((1, 8, 8), np.float32)
    b[0, 0, 0] = 1.0
    d = launch("tf32", a, b, np.zeros((1, 16, 8), np.float32), 32)
    np.testing.assert_array_equal(d[0, :4, 0], [1 + 2.0 ** -10, -(1 + 2.0 ** -10), 1.0, 3.0])


MATMUL = HEADER + """
@ptxpy.jit
def matmul_tf32(x: Array[f32, 2], y: Array[f32, 2], out: Array[f32, 2]):
    # one warp per 16 x 8 tile of out; the k loop accumulates in the fragments
    w = ptxpy.global_id() // 32
    tiles_n = out.shape[1] // 8
    row = (w // tiles_n) * 16
    col = (w % tiles_n) * 8
    lane = ptxpy.lane_id()
    g = lane // 4
    t = lane % 4
    d0 = f32(0)
    d1 = f32(0)
    d2 = f32(0)
    d3 = f32(0)
    for k in range(0, x.shape[1], 8):
        d0, d1, d2, d3 = ptxpy.mma_sync(
            (x[row + g, k + t], x[row + g + 8, k + t], x[row + g, k + t + 4], x[row + g + 8, k + t + 4]),
            (y[k + t, col + g], y[k + t + 4, col + g]),
            (d0, d1, d2, d3))
    out[row + g, col + 2 * t:col + 2 * t + 2] = (d0, d1)
    out[row + g + 8, col + 2 * t:col + 2 * t + 2] = (d2, d3)
"""


def test_a_matmul_accumulates_over_k_in_the_fragments():
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, (32, 40)).astype(np.float32)
    y = rng.integers(-3, 4, (40, 24)).astype(np.float32)
    warps = (32 // 16) * (24 // 8)
    (out,) = run(MATMUL, "matmul_tf32", [x, y, Out((32, 24), np.float32)], warps, 32)
    np.testing.assert_array_equal(out, x @ y)


@pytest.mark.skipif(__import__("os").environ.get("PTXPY_TEST_DEVICE") == "gpu",
                    reason="the simulator's check; on the GPU a partial warp is undefined")
def test_the_simulator_requires_whole_warps():
    a, b, c = tiles("tf32", 2, np.random.default_rng(0), integers=True)
    with pytest.raises(SimulatorError, match="needs whole warps of 32 threads; this block of 48 "
                                             "has a last warp of 16"):
        run(TF32, "tiles_tf32", [a, b, c, Out(c.shape, np.float32)], 1, 48)


# f32 values rounded to f16/bf16 as they go into the fragments: each register's pair is one
# cvt.rn.{T}x2.f32, except where a half has another use (a0, stored): there two cvt and a mov
ROUNDED = HEADER + """
@ptxpy.jit
def rounded(a: Array[f32, 2], b: Array[f32, 2], c: Array[f32, 2], d: Array[f32, 2],
            first: Array[{T}, 1]):
    lane = ptxpy.lane_id()
    g = lane // 4
    t = lane % 4
    a0 = {T}(a[g, 2 * t])
    first[lane] = a0
    d0, d1, d2, d3 = ptxpy.mma_sync(
        (a0, {T}(a[g, 2 * t + 1]), {T}(a[g + 8, 2 * t]), {T}(a[g + 8, 2 * t + 1]),
         {T}(a[g, 2 * t + 8]), {T}(a[g, 2 * t + 9]), {T}(a[g + 8, 2 * t + 8]),
         {T}(a[g + 8, 2 * t + 9])),
        ({T}(b[2 * t, g]), {T}(b[2 * t + 1, g]), {T}(b[2 * t + 8, g]), {T}(b[2 * t + 9, g])),
        (c[g, 2 * t], c[g, 2 * t + 1], c[g + 8, 2 * t], c[g + 8, 2 * t + 1]))
    d[g, 2 * t:2 * t + 2] = (d0, d1)
    d[g + 8, 2 * t:2 * t + 2] = (d2, d3)
"""


@pytest.mark.parametrize("kind", ["f16", "bf16"])
def test_f32_values_rounded_into_a_fragment_convert_in_pairs(kind):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 8)).astype(np.float32)
    c = rng.standard_normal((16, 8)).astype(np.float32)
    source = ROUNDED.replace("{T}", kind)
    d, first = run(source, "rounded", [a, b, c, Out((16, 8), np.float32),
                                       Out(32, HALF_TYPES[kind])], 1, 32)
    rounded_a, rounded_b = (x.astype(HALF_TYPES[kind]).astype(np.float64) for x in (a, b))
    expected = rounded_a @ rounded_b + c          # (the card's f32 sums: within their error)
    scale = np.abs(rounded_a) @ np.abs(rounded_b) + np.abs(c)
    assert np.all(np.abs(d - expected) <= 2.0 ** -20 * scale)
    wrong = rounded_a.copy()                      # one element rounded otherwise is seen
    big = np.argmax(np.abs(a[0]))
    wrong[0, big] = np.float64(a[0, big])
    assert np.any(np.abs(d - (wrong @ rounded_b + c)) > 2.0 ** -20 * scale)
    lanes = np.arange(32)
    np.testing.assert_array_equal(first, a[lanes // 4, 2 * (lanes % 4)].astype(HALF_TYPES[kind]))
    ptx = compile_source(source, "rounded").ptx
    assert ptx.count(f"cvt.rn.{kind}x2.f32") == 5
    assert ptx.count("mov.b32") == 1 and ptx.count(f"cvt.rn.{kind}.f32") == 2


def test_the_ptx_names_the_instruction_and_rounds_tf32_operands():
    ptx = compile_source(TF32, "tiles_tf32").ptx
    assert ptx.count("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {") == 1
    assert ptx.count("cvt.rna.tf32.f32") == 6
    half = compile_source(HALF.replace("{T}", "bf16"), "tiles_bf16").ptx
    assert half.count("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {") == 1
    assert half.count("mov.b32") >= 6


def compile_error(body: str) -> str:
    with pytest.raises(CompileError) as info:
        compile_source(HEADER + "\n@ptxpy.jit\ndef k(x: Array[f32], h: Array[f16], "
                       "g: Array[bf16], y: Array[f64]):\n" + body, "k")
    return str(info.value).splitlines()[0]


USAGE = ("ptxpy.mma_sync takes three tuples (a, b, c): 4, 2 and 4 f32 values (m16n8k8, tf32), "
         "8 and 4 values all f16 or all bf16 and 4 f32 values (m16n8k16), or 16 and 8 values, "
         "each all i8 or all u8, and 4 i32 values (m16n8k32)")


@pytest.mark.parametrize("body, message", [
    ("    d0, d1, d2, d3 = ptxpy.mma_sync((x[0], x[1], x[2]), (x[0], x[1]), (x[0], x[1], x[2], x[3]))\n",
     f"kernels.py:7:22: error: {USAGE}; got tuples of 3, 2 and 4"),
    ("    d0, d1, d2, d3 = ptxpy.mma_sync(x, (x[0], x[1]), (x[0], x[1], x[2], x[3]))\n",
     f"kernels.py:7:37: error: {USAGE}; got 'x'"),
    ("    d0, d1, d2, d3 = ptxpy.mma_sync((x[0], x[1], x[2], x[3]), (x[0], x[1]))\n",
     "kernels.py:7:22: error: ptxpy.mma_sync() takes 3 arguments (2 given)"),
    ("    d0, d1, d2, d3 = ptxpy.mma_sync((h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]), "
     "(g[0], g[1], g[2], g[3]), (x[0], x[1], x[2], x[3]))\n",
     "kernels.py:7:22: error: the a and b values of an m16n8k16 ptxpy.mma_sync must be all f16 or "
     "all bf16 (cast them), got bf16, f16"),
    ("    d0, d1, d2, d3 = ptxpy.mma_sync((x[0], x[1], y[2], x[3]), (x[0], x[1]), "
     "(x[0], x[1], x[2], x[3]))\n",
     "kernels.py:7:50: error: ptxpy.mma_sync: 'y[2]' is f64, where f32 is needed (cast it: f32(...))"),
    ("    d0, d1, d2 = ptxpy.mma_sync((x[0], x[1], x[2], x[3]), (x[0], x[1]), (x[0], x[1], x[2], x[3]))\n",
     "kernels.py:7:5: error: cannot unpack 4 values into 3 variables"),
])
def test_errors(body, message):
    assert compile_error(body) == message


def test_through_jax_a_block_of_partial_warps_is_an_error_before_launch():
    a, b, c = tiles("tf32", 2, np.random.default_rng(2), integers=True)
    d = tiles_tf32(jnp.asarray(a), jnp.asarray(b), jnp.asarray(c))      # 64 threads: two tiles
    np.testing.assert_array_equal(np.asarray(d), a @ b + c)
    a, b, c = tiles("tf32", 3, np.random.default_rng(2), integers=True)
    with pytest.raises(ValueError, match=r"block \(80, 1, 1\) has 80 threads, not a multiple of 32: "
                                         "the kernel calls ptxpy.mma_sync"):
        tiles_tf32(jnp.asarray(a), jnp.asarray(b), jnp.asarray(c))
