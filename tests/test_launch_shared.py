"""Shared arrays sized at launch (`ptxpy.shared_array(ptxpy.block_dim.x, f32)`, extents from
`x.shape[k]`): CUDA's `extern __shared__` with a size chosen per launch. The kernel computes
where each array lies; the host asks for the bytes at each launch (transpiler/launch_shape.py).
Checked in the simulator (on the GPU with PTXPY_TEST_DEVICE=gpu) and through JAX (the
simulator without a GPU, the card with one)."""
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ptxpy
from kernel_harness import Out, compile_source, run
from ptxpy import Array, f32, i32
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.transpiler import driver
from ptxpy.transpiler.errors import CompileError
from ptxpy.transpiler.launch_shape import (LaunchShapeError, aligned, describe, evaluate,
                                           launch_shared_bytes)

HEADER = """
import ptxpy
from ptxpy import Array, f16, f32, f64, i32, i64, u8, u32
"""

BLOCK_REVERSE = HEADER + """
@ptxpy.jit
def block_reverse(x: Array[f32], out: Array[f32]):
    s = ptxpy.shared_array(ptxpy.block_dim.x, f32)
    t = ptxpy.thread_idx.x
    base = ptxpy.block_idx.x * ptxpy.block_dim.x
    s[t] = x[base + t]
    ptxpy.syncthreads()
    out[base + t] = s[ptxpy.block_dim.x - 1 - t]
"""


@pytest.mark.parametrize("block", [32, 96, 256, 1000])
def test_one_array_the_size_of_the_block(block):
    kernel = compile_source(BLOCK_REVERSE, "block_reverse")
    assert ".extern .shared .align 16 .b8 smem[];" in kernel.ptx
    assert "//   smem_s at smem+0, f32[ptxpy.block_dim.x]" in kernel.ptx
    assert kernel.options["launch_shared"] == (("s", 4, (("block_dim", "x"),)),)
    assert kernel.shared_bytes == 0 and "dynamic_shared_bytes" not in kernel.options
    assert launch_shared_bytes(kernel, {}, (block, 1, 1)) == -(-block * 4 // 16) * 16
    x = np.random.default_rng(block).standard_normal(3 * block).astype(np.float32)
    (out,) = run(BLOCK_REVERSE, "block_reverse", [x, Out(3 * block, np.float32)], grid=3, block=block)
    np.testing.assert_array_equal(out, x.reshape(3, block)[:, ::-1].reshape(-1))


LAYOUT = HEADER + """
@ptxpy.jit
def layout(x: Array[f16, 2], out: Array[f32]):
    a = ptxpy.shared_array(ptxpy.block_dim.x, u8)
    b = ptxpy.shared_array((x.shape[0], x.shape[1]), f16)
    fixed = ptxpy.shared_array(5, i32)
    c = ptxpy.shared_array(ptxpy.cdiv(ptxpy.block_dim.x, 3) + 1, f64)
    t = ptxpy.thread_idx.x
    n = ptxpy.block_dim.x
    cells = x.shape[0] * x.shape[1]
    a[t] = u8(t + 1)
    for k in range(t, cells, n):
        b[k // x.shape[1], k % x.shape[1]] = x[k // x.shape[1], k % x.shape[1]]
    if t < c.shape[0]:
        c[t] = f64(t) * 0.5 + 1000.0
    if t < 5:
        fixed[t] = 100 + t
    ptxpy.syncthreads()
    out[t] = f32(a[t])
    for k in range(t, cells, n):
        out[n + k] = f32(b[k // x.shape[1], k % x.shape[1]])
    if t < c.shape[0]:
        out[n + cells + t] = f32(c[t])
    if t < 5:
        out[n + cells + c.shape[0] + t] = f32(fixed[t])
"""


@pytest.mark.parametrize("block, rows, cols", [(37, 3, 5), (64, 7, 9), (16, 1, 1)])
def test_several_arrays_of_odd_sizes_do_not_overlap(block, rows, cols):
    """Each array is written before the barrier and read after it: an array placed over
    another would change what the other reads back."""
    kernel = compile_source(LAYOUT, "layout")
    assert [entry[0] for entry in kernel.options["launch_shared"]] == ["a", "b", "c"]
    assert kernel.options["dynamic_shared_bytes"] == 32      # `fixed` (20 bytes), then the region
    c_len = -(-block // 3) + 1
    expected_bytes = 32 + sum(-(-n // 16) * 16 for n in (block, rows * cols * 2, c_len * 8))
    assert launch_shared_bytes(kernel, {"x": (rows, cols), "out": (1,)}, (block,)) == expected_bytes
    x = (np.arange(rows * cols) % 200 - 50).astype(np.float16).reshape(rows, cols)
    total = block + rows * cols + c_len + 5
    (out,) = run(LAYOUT, "layout", [x, Out(total, np.float32)], grid=1, block=block)
    expected = np.concatenate([np.arange(1, block + 1), x.reshape(-1).astype(np.float32),
                               np.arange(c_len) * 0.5 + 1000.0, 100 + np.arange(5)])
    np.testing.assert_array_equal(out, expected.astype(np.float32))


def test_the_layout_by_hand():
    """37 threads, x of 3 x 5: `fixed` takes bytes 0-19; a (37 bytes) starts at 32, b (30 bytes)
    at 80, c (14 f64) at 112 and ends at 224."""
    kernel = compile_source(LAYOUT, "layout")
    assert launch_shared_bytes(kernel, {"x": (3, 5), "out": (0,)}, (37, 1, 1)) == 224
    assert "//   smem_a at smem+32, u8[ptxpy.block_dim.x]" in kernel.ptx
    assert "//   smem_b after smem_a, f16[x.shape[0], x.shape[1]]" in kernel.ptx
    assert "//   smem_c after smem_b, f64[ptxpy.cdiv(ptxpy.block_dim.x, 3) + 1]" in kernel.ptx
    assert "//   smem_fixed at smem+0, 20 bytes" in kernel.ptx


FUNC_SCRATCH = HEADER + """
@ptxpy.func
def block_total(v: f32) -> f32:
    scratch = ptxpy.shared_array(ptxpy.block_dim.x, f32)
    t = ptxpy.thread_idx.x
    scratch[t] = v
    ptxpy.syncthreads()
    total = f32(0.0)
    for k in range(ptxpy.block_dim.x):
        total += scratch[k]
    return total

@ptxpy.jit
def twice(x: Array[f32], out: Array[f32]):
    mine = ptxpy.shared_array(len(x), f32)
    t = ptxpy.thread_idx.x
    mine[t] = x[t] * 3.0
    first = block_total(x[t])
    second = block_total(x[t] + 1.0)
    ptxpy.syncthreads()
    out[t] = mine[len(x) - 1 - t] + first + 100.0 * second
"""


def test_a_device_function_s_array_has_one_place_per_call():
    """The two calls' arrays and the kernel's lie apart: the second call writes its array while
    other threads may still read the first's (no barrier between), which the simulator's race
    check reports if they share bytes."""
    kernel = compile_source(FUNC_SCRATCH, "twice")
    assert [entry[0] for entry in kernel.options["launch_shared"]] == ["mine", "scratch", "scratch"]
    x = np.arange(48, dtype=np.float32)
    (out,) = run(FUNC_SCRATCH, "twice", [x, Out(48, np.float32)], grid=1, block=48, racecheck=True)
    np.testing.assert_array_equal(out, x[::-1] * 3 + x.sum() + 100 * (x + 1).sum())


PAST_48_KB = HEADER + """
@ptxpy.jit
def big_and_sized(x: Array[f32], out: Array[f32]):
    big = ptxpy.shared_array(15360, f32)          # 60 KB
    row = ptxpy.shared_array(ptxpy.block_dim.x, f32)
    t = ptxpy.thread_idx.x
    for k in range(t, 15360, ptxpy.block_dim.x):
        big[k] = f32(k)
    row[t] = x[t]
    ptxpy.syncthreads()
    out[t] = row[ptxpy.block_dim.x - 1 - t] + big[15359 - t]
"""


def test_with_static_arrays_past_48_kb():
    for arch in ("sm_80", "sm_90"):
        kernel = compile_source(PAST_48_KB, "big_and_sized", arch=arch)
        assert kernel.options["dynamic_shared_bytes"] == 61440
        assert launch_shared_bytes(kernel, {}, (100,)) == 61440 + 400
    x = np.arange(128, dtype=np.float32)
    (out,) = run(PAST_48_KB, "big_and_sized", [x, Out(128, np.float32)], grid=1, block=128)
    np.testing.assert_array_equal(out, x[::-1] + (15359 - np.arange(128)).astype(np.float32))


def test_past_the_target_s_limit_is_an_error_before_launch():
    kernel = compile_source(PAST_48_KB, "big_and_sized", arch="sm_80")
    most = (166912 - 61440) // 4
    assert launch_shared_bytes(kernel, {}, (most,)) == 166912
    with pytest.raises(LaunchShapeError, match=r"kernel 'big_and_sized': its shared arrays take "
                                               r"166928 bytes at this launch; sm_80 gives a block "
                                               r"at most 166912 \(163 KB\)"):
        launch_shared_bytes(kernel, {}, (most + 1,))


@pytest.mark.skipif(os.environ.get("PTXPY_TEST_DEVICE") == "gpu",
                    reason="the simulator's report of a trap")
def test_debug_checks_indices_against_the_launch_s_extent():
    source = HEADER + """
@ptxpy.jit
def off_by_one(x: Array[f32], out: Array[f32]):
    s = ptxpy.shared_array(ptxpy.block_dim.x, f32)
    t = ptxpy.thread_idx.x
    s[t] = x[t]
    ptxpy.syncthreads()
    out[t] = s[t + 1]
"""
    with pytest.raises(SimulatorError, match=r"index out of bounds: index 24 is not in \[0, 24\) "
                                             r"for axis 0 of 's'"):
        run(source, "off_by_one", [np.zeros(24, np.float32), Out(24, np.float32)], grid=1,
            block=24, debug=True)


VARIABLES = HEADER + """
@ptxpy.jit
def tiles(x: Array[f32, 2], out: Array[f32, 2]):
    rows = x.shape[0]
    cols = x.shape[1]
    wide = ptxpy.cdiv(cols, 4) * 4
    pad = 3
    t = ptxpy.thread_idx.x
    tile = ptxpy.shared_array((rows, wide + pad), f32)
    for k in range(t, rows * cols, ptxpy.block_dim.x):
        tile[k // cols, k % cols] = x[k // cols, k % cols]
    ptxpy.syncthreads()
    for k in range(t, rows * cols, ptxpy.block_dim.x):
        out[k // cols, k % cols] = tile[rows - 1 - k // cols, k % cols] + f32(tile.shape[1])
"""


def test_a_variable_assigned_once_may_size_an_array():
    kernel = compile_source(VARIABLES, "tiles")
    ((name, size, (rows, cols)),) = kernel.options["launch_shared"]
    assert (name, size, describe(rows)) == ("tile", 4, "x.shape[0]")
    assert describe(cols) == "ptxpy.cdiv(x.shape[1], 4) * 4 + 3"
    x = np.arange(5 * 7, dtype=np.float32).reshape(5, 7)
    (out,) = run(VARIABLES, "tiles", [x, Out((5, 7), np.float32)], grid=1, block=32)
    np.testing.assert_array_equal(out, x[::-1] + np.float32(8 + 3))


def test_a_variable_assigned_twice_may_not():
    for second in ("    n = n + 1\n", "    n += 1\n"):
        body = ("@ptxpy.jit\ndef k(x: Array[f32]):\n    n = x.shape[0]\n" + second +
                "    s = ptxpy.shared_array(n, f32)\n")
        assert compile_error(body).startswith("kernels.py:8:28: error: 'n' is a variable; the shape")
    body = "@ptxpy.jit\ndef k(x: Array[f32]):\n    n = 4\n    s = ptxpy.shared_array((n, n), f32)\n"
    kernel = compile_source(HEADER + body, "k")      # known now: a static array
    assert "launch_shared" not in kernel.options and kernel.shared_bytes == 64


# --- the host's arithmetic -------------------------------------------------------------------

def test_formulas_evaluate_with_python_s_meaning():
    shapes, block = {"x": (10, 7)}, (33, 2, 1)
    cases = [(("//", ("-", 0, ("shape", "x", 1)), 2), -4),               # floor, not truncation
             (("cdiv", ("block_dim", "x"), 4), 9),
             (("min", ("block_dim", "y"), ("shape", "x", 0)), 2),
             (("max", ("*", ("block_dim", "z"), 3), 1), 3),
             (("+", ("shape", "x", 0), ("*", 2, ("block_dim", "x"))), 76)]
    for formula, value in cases:
        assert evaluate(formula, shapes, block) == value, describe(formula)
    assert describe(("+", ("shape", "x", 0), ("*", 2, ("block_dim", "x")))) == \
        "x.shape[0] + 2 * ptxpy.block_dim.x"
    with pytest.raises(LaunchShapeError, match="divides by zero"):
        evaluate(("//", 4, ("shape", "x", 0)), {"x": (0,)}, block)
    with pytest.raises(LaunchShapeError, match="past the 32-bit integers"):
        evaluate(("*", ("shape", "x", 0), ("shape", "x", 0)), {"x": (1 << 16,)}, block)


def test_scalars_modulo_and_negation_evaluate_with_python_s_meaning():
    block = (64, 1, 1)
    cases = [(("%", ("scalar", "n"), 7), 5), (("%", ("neg", ("scalar", "n")), 7), 2),
             (("%", 17, ("neg", ("block_dim", "y"))), 0), (("%", ("scalar", "n"), -5), -3),
             (("neg", ("//", ("neg", ("scalar", "n")), 4)), 3)]
    for formula, value in cases:
        assert evaluate(formula, {}, block, {"n": 12}) == value, describe(formula)
    assert describe(("neg", ("//", ("neg", ("scalar", "n")), 4))) == "-(-n // 4)"
    assert describe(("*", ("%", ("scalar", "n"), 3), ("neg", 2))) == "n % 3 * -2"
    assert describe(("%", ("scalar", "n"), ("+", 1, 2))) == "n % (1 + 2)"
    with pytest.raises(LaunchShapeError, match="divides by zero"):
        evaluate(("%", 4, ("scalar", "n")), {}, block, {"n": 0})
    with pytest.raises(LaunchShapeError, match=r"^n is 2147483648, past the 32-bit integers"):
        evaluate(("scalar", "n"), {}, block, {"n": 1 << 31})
    with pytest.raises(LaunchShapeError, match="scalar parameter 'n' is passed as a JAX array"):
        evaluate(("+", ("scalar", "n"), 1), {}, block, {})


def test_a_negative_extent_is_an_error_before_launch():
    source = HEADER + """
@ptxpy.jit
def k(x: Array[f32], out: Array[f32]):
    s = ptxpy.shared_array(ptxpy.block_dim.x - 64, f32)
    s[0] = x[0]
    out[0] = s[0]
"""
    kernel = compile_source(source, "k")
    assert launch_shared_bytes(kernel, {}, (80,)) == 64
    with pytest.raises(LaunchShapeError, match=r"kernel 'k': shared array 's' would have a negative "
                                               r"extent at this launch \(ptxpy.block_dim.x - 64 = -32\)"):
        launch_shared_bytes(kernel, {}, (32,))


SCALAR_SIZED = HEADER + """
@ptxpy.jit
def windows(x: Array[f32], out: Array[f32], n: i32, m: u32, w: i64):
    t = ptxpy.thread_idx.x
    window = ptxpy.shared_array(n, f32)
    odd = ptxpy.shared_array((m % 7, -(-n // 2)), u8)
    last = ptxpy.shared_array(max(w, 1), i32)
    for j in range(t, n, ptxpy.block_dim.x):
        window[j] = x[j] * 2.0
    if t == 0:
        odd[odd.shape[0] - 1, odd.shape[1] - 1] = u8(odd.shape[1])
        last[last.shape[0] - 1] = i32(w)
    ptxpy.syncthreads()
    if t < n:
        out[t] = window[n - 1 - t] + f32(odd[odd.shape[0] - 1, odd.shape[1] - 1]) * 1000.0 \\
            + f32(last[last.shape[0] - 1]) * 100000.0
"""


@pytest.mark.parametrize("n, m, w, block", [(100, 10, 3, 128), (37, 3, 1, 64), (5, 20, 40, 32)])
def test_scalar_parameters_size_arrays_with_modulo_and_negation(n, m, w, block):
    x = np.arange(100, dtype=np.float32)
    (out,) = run(SCALAR_SIZED, "windows", [x, Out(128, np.float32, init=-1), n, m, w], 1, block,
                 racecheck=True)
    t = np.arange(n)
    expected = np.full(128, -1, np.float32)
    expected[t] = x[n - 1 - t] * 2 + (-(-n // 2)) * 1000 + w * 100000
    np.testing.assert_array_equal(out, expected)
    kernel = compile_source(SCALAR_SIZED, "windows")
    assert "//   smem_odd after smem_window, u8[m % 7, -(-n // 2)]" in kernel.ptx
    assert "//   smem_last after smem_odd, i32[max(w, 1)]" in kernel.ptx
    assert launch_shared_bytes(kernel, {}, (block,), {"n": n, "m": m, "w": w}) == \
        aligned(4 * n) + aligned((m % 7) * (-(-n // 2))) + aligned(4 * max(w, 1))


# --- errors in the source -------------------------------------------------------------------

def compile_error(body: str) -> str:
    with pytest.raises(CompileError) as info:
        compile_source(HEADER + body, "k")
    return str(info.value).splitlines()[0]


ALLOWED = ("a compile-time constant, or known at launch: built from ptxpy.block_dim, x.shape[k] of "
           "the kernel's array parameters, its integer scalar parameters and constants "
           "(+ - * // % ptxpy.cdiv min max)")


@pytest.mark.parametrize("body, message", [
    ("@ptxpy.jit\ndef k(x: Array[f32], n: i32):\n    for j in range(n):\n        m = j\n"
     "    s = ptxpy.shared_array(m * 2, f32)\n",
     f"kernels.py:8:28: error: 'm' is a variable; the shape of ptxpy.shared_array must be "
     f"{ALLOWED}, or a variable assigned once, before it, from such an expression"),
    ("@ptxpy.jit\ndef k(x: Array[f32], n: i32):\n    n += 1\n    s = ptxpy.shared_array(n, f32)\n",
     "kernels.py:7:28: error: 'n' is assigned in the kernel, and the shape of ptxpy.shared_array "
     "is computed from parameter 'n' as the launch passes it: give the new value another name"),
    ("@ptxpy.jit\ndef k(x: Array[f32], n: f32):\n    s = ptxpy.shared_array((4, n), f32)\n",
     "kernels.py:6:32: error: parameter 'n' is f32: an extent of ptxpy.shared_array must be an "
     "integer"),
    ("@ptxpy.jit\ndef k(x: Array[f32], n: bool):\n    s = ptxpy.shared_array(n + 1, f32)\n",
     "kernels.py:6:28: error: parameter 'n' is bool: an extent of ptxpy.shared_array must be an "
     "integer"),
    ("@ptxpy.func\ndef f(n: i32) -> f32:\n    s = ptxpy.shared_array(n, f32)\n"
     "    return s[0]\n\n@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = f(4)\n",
     "kernels.py:6:28: error: 'n': in a @ptxpy.func a shared array sized at launch may use "
     "ptxpy.block_dim and constants only (the launch does not know which value 'n' is); declare "
     "it in the kernel"),
    ("@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.shared_array(len(x) % (2 - 2), f32)\n",
     "kernels.py:6:28: error: integer modulo by zero"),
    ("@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.shared_array(ptxpy.grid_dim.x, f32)\n",
     f"kernels.py:6:28: error: 'ptxpy.grid_dim.x' is not known at launch: the shape of "
     f"ptxpy.shared_array must be {ALLOWED}"),
    ("@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.shared_array(blockDim.x, f32)\n",
     "kernels.py:6:28: error: name 'blockDim' is not defined; CUDA's blockDim is ptxpy.block_dim"),
    ("@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.local_array(ptxpy.block_dim.x, f32)\n",
     "kernels.py:6:27: error: the shape of ptxpy.local_array must be a compile-time constant: "
     "literals, module constants, Const parameters and arithmetic on them"),
    ("@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.shared_array(x.shape[0] // 0, f32)\n",
     "kernels.py:6:28: error: integer division by zero"),
    ("@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.shared_array(ptxpy.cdiv(len(x), 0), f32)\n",
     "kernels.py:6:28: error: ptxpy.cdiv by zero"),
    ("@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.shared_array(x.shape[1], f32)\n",
     "kernels.py:6:28: error: 'x.shape[1]': index x.shape with one compile-time integer in [-1, 1)"),
    ("@ptxpy.jit\ndef k(x: Array[f32]):\n    t = ptxpy.shared_array(4, f32)\n"
     "    s = ptxpy.shared_array(t.shape[0] * ptxpy.block_dim.x, f32)\n",
     "kernels.py:7:28: error: 't.shape[0]': a shared array sized at launch takes its extents from "
     "the kernel's array parameters, not from another shared or local array"),
    ("@ptxpy.func\ndef f(y: Array[f32]) -> f32:\n    s = ptxpy.shared_array(len(y), f32)\n"
     "    return s[0]\n\n@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = f(x)\n",
     "kernels.py:6:28: error: 'len(y)': in a @ptxpy.func a shared array sized at launch may use "
     "ptxpy.block_dim and constants only (the launch does not know which array 'y' is); declare "
     "it in the kernel"),
    ("@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.shared_array((ptxpy.block_dim.x, 0), f32)\n",
     "kernels.py:6:29: error: the shape of ptxpy.shared_array must be a positive int or a tuple of "
     "1 to 4 positive ints, got (ptxpy.block_dim.x, 0)"),
    ("@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.shared_array((ptxpy.block_dim.x, 2.5), f32)\n",
     "kernels.py:6:48: error: an extent of ptxpy.shared_array must be an int, got 2.5"),
    ("@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.shared_array(len(x) - 10**12, f32)\n",
     "kernels.py:6:37: error: 1000000000000 is past the 32-bit integers the kernel computes a "
     "shape known at launch in"),
    # a constant tuple inside the shape is no extent known at launch (a fuzz find: it was read
    # as a launch formula)
    ("@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.shared_array(((1, 2),), f32)\n",
     "kernels.py:6:29: error: the shape of ptxpy.shared_array must be a positive int or a tuple of "
     "1 to 4 positive ints, got ((1, 2),)"),
    ("@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.shared_array((4, (2, 3)), f32)\n",
     "kernels.py:6:29: error: the shape of ptxpy.shared_array must be a positive int or a tuple of "
     "1 to 4 positive ints, got (4, (2, 3))"),
    ("@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.shared_array((len(x), (2, 3)), f32)\n",
     "kernels.py:6:38: error: an extent of ptxpy.shared_array must be an int, got (2, 3)"),
])
def test_errors(body, message):
    assert compile_error(body) == message


def test_every_ptx_assembles_and_the_typed_tree_shows_the_formula():
    from kernel_harness import assemble_all

    for source, name in [(BLOCK_REVERSE, "block_reverse"), (LAYOUT, "layout"),
                         (FUNC_SCRATCH, "twice"), (PAST_48_KB, "big_and_sized"),
                         (SCALAR_SIZED, "windows")]:
        assemble_all(source, name)
    typed = driver.compile_kernel(driver.parse(LAYOUT, "kernels.py"), "layout", None, frozenset(),
                                  driver.Options("sm_90"), stop_after="typed").typed
    from ptxpy.transpiler.typed import format_module

    text = format_module(typed)
    assert "shared b: f16[x.shape[0], x.shape[1]]" in text
    assert "shared c: f64[ptxpy.cdiv(ptxpy.block_dim.x, 3) + 1]" in text


# --- through JAX -----------------------------------------------------------------------------

@ptxpy.jit(out_shape=lambda x: x, grid=1, block=lambda x: x.shape[-1])
def reverse_row(x: Array[f32], out: Array[f32]):
    s = ptxpy.shared_array(len(x), f32)
    t = ptxpy.thread_idx.x
    s[t] = x[t]
    ptxpy.syncthreads()
    out[t] = s[len(x) - 1 - t] * 2.0


def test_through_jax_each_call_asks_for_its_own_size():
    for n in (40, 200, 1024):
        x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        np.testing.assert_array_equal(np.asarray(reverse_row(jnp.asarray(x))), x[::-1] * 2)
        jitted = jax.jit(lambda v: reverse_row(reverse_row(v) + 1.0))
        np.testing.assert_array_equal(np.asarray(jitted(jnp.asarray(x))), x * 4 + 2)


def test_under_vmap_the_kernel_sees_one_row():
    xs = np.random.default_rng(5).standard_normal((3, 72)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(jax.vmap(reverse_row)(jnp.asarray(xs))),
                                  xs[:, ::-1] * 2)


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=32)
def too_big(x: Array[f32], out: Array[f32]):
    s = ptxpy.shared_array(x.shape[0] * 4, f32)
    t = ptxpy.thread_idx.x
    s[t] = x[t]
    out[t] = s[t]


def test_through_jax_a_launch_past_the_limit_is_an_error():
    np.testing.assert_array_equal(np.asarray(too_big(jnp.ones(64, jnp.float32)))[:32], np.ones(32))
    with pytest.raises(ValueError, match="its shared arrays take 262144 bytes at this launch"):
        too_big(jnp.zeros(16384, jnp.float32))


@ptxpy.jit(out_shape=lambda x, n: x, grid=1, block=128)
def window_sum(x: Array[f32], n: i32, out: Array[f32]):
    s = ptxpy.shared_array(n, f32)
    t = ptxpy.thread_idx.x
    for j in range(t, n, ptxpy.block_dim.x):
        s[j] = x[j]
    ptxpy.syncthreads()
    if t < x.shape[0]:
        total = f32(0)
        for j in range(n):
            total += s[j]
        out[t] = total + f32(t)


def test_through_jax_a_scalar_passed_as_a_number_sizes_the_array():
    x = np.random.default_rng(9).integers(-50, 50, 128).astype(np.float32)   # exact sums
    for n in (1, 50, 128):
        np.testing.assert_array_equal(np.asarray(window_sum(jnp.asarray(x), n)),
                                      x[:n].sum() + np.arange(128, dtype=np.float32))
    jitted = jax.jit(lambda v: window_sum(v, 7) * 2)
    np.testing.assert_array_equal(np.asarray(jitted(jnp.asarray(x))),
                                  (x[:7].sum() + np.arange(128, dtype=np.float32)) * 2)
    rows = np.stack([x, x + 1])
    np.testing.assert_array_equal(np.asarray(jax.vmap(lambda v: window_sum(v, 3))(jnp.asarray(rows))),
                                  rows[:, :3].sum(1, keepdims=True) + np.arange(128, dtype=np.float32))


def test_through_jax_a_scalar_the_host_cannot_read_is_an_error_before_launch():
    x = jnp.ones(128, jnp.float32)
    unknown = "scalar parameter 'n' is passed as a JAX array"
    with pytest.raises(LaunchShapeError, match=unknown):
        jax.jit(lambda v, n: window_sum(v, n))(x, 5)
    with pytest.raises(LaunchShapeError, match=unknown):
        jax.vmap(window_sum, in_axes=(None, 0))(x, jnp.array([1, 2], jnp.int32))
    with pytest.raises(LaunchShapeError, match=r"negative extent at this launch \(n = -3\)"):
        window_sum(x, -3)
