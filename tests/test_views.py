"""`w = a.view(T)`: an array parameter's or a shared array's memory as elements of another scalar
type, as wide or wider (docs/language.md, "Views"), against NumPy's `ndarray.view`; run in the
simulator (on the GPU with PTXPY_TEST_DEVICE=gpu).
"""
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ptxpy
from kernel_harness import Out, compile_source, run
from ptxpy import Array, i32, u64
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.transpiler.errors import CompileError
from ptxpy.transpiler.frontend import check_kernel, parse_module

ON_GPU = os.environ.get("PTXPY_TEST_DEVICE") == "gpu"
HEADER = """
import ptxpy
from ptxpy import Array, bf16, f16, f32, i8, i16, i32, i64, u8, u16, u32, u64
"""

WORDS = HEADER + """
@ptxpy.jit
def words(x: Array[u8, 2], out: Array[u32, 2]):
    w = x.view(u32)
    r = ptxpy.block_idx.x
    c = ptxpy.thread_idx.x
    if c < w.shape[1]:
        out[r, c] = w[r, c]
"""


def test_bytes_read_as_words_match_numpy_view():
    x = np.random.default_rng(0).integers(0, 256, (3, 24), dtype=np.uint8)
    (out,) = run(WORDS, "words", [x, Out((3, 6), np.uint32)], grid=3, block=8)
    np.testing.assert_array_equal(out, x.view(np.uint32))


# The status words of a decoupled look-back: i32 pairs written and read as one u64 (flag in the
# high half, value in the low), with an ordered load and an atomic on the view.
PAIRS = HEADER + """
@ptxpy.jit
def pairs(state: Array[i32, 2], seen: Array[u64], out: Array[i32]):
    s = state.view(u64)
    t = ptxpy.global_id(0)
    if t < s.shape[0]:
        seen[t] = ptxpy.load_acquire(s, (t, 0))
        ptxpy.store_release(s, (t, 0), (u64(2) << 32) | u64(t * 10))
        ptxpy.atomic_add(s, (t, 0), u64(1))
        out[t] = state[t, 0] + state[t, 1]
"""


def test_i32_pairs_as_u64_words():
    state = np.arange(10, dtype=np.int32).reshape(5, 2)
    seen, out = run(PAIRS, "pairs", [state.copy(), Out(5, np.uint64), Out(5, np.int32)],
                    grid=1, block=8)
    np.testing.assert_array_equal(seen, state.view(np.uint64)[:, 0])
    np.testing.assert_array_equal(out, np.arange(5) * 10 + 1 + 2)


def test_an_array_written_through_a_view_is_never_read_through_the_read_only_path():
    ptx = compile_source(PAIRS, "pairs").ptx
    assert "ld.global.nc" not in ptx
    assert "ld.acquire.gpu.global.u64" in ptx and "red.global.add.u64" in ptx


BITS = HEADER + """
@ptxpy.jit
def bits(x: Array[f32], h: Array[bf16], out: Array[i32], halves: Array[u32]):
    xi = x.view(i32)
    hw = h.view(u32)
    t = ptxpy.global_id(0)
    if t < len(xi):
        out[t] = xi[t] & 0x7FFFFFFF          # |x|'s bits
    if t < hw.size:
        a, b = hw[2 * t:2 * t + 2]
        halves[2 * t] = a
        halves[2 * t + 1] = b
"""


def test_same_width_and_vector_loads_through_views():
    x = np.linspace(-3, 3, 16, dtype=np.float32)
    h = np.asarray(jnp.linspace(-2, 2, 64, dtype=jnp.bfloat16))
    out, halves = run(BITS, "bits", [x, h, Out(16, np.int32), Out(32, np.uint32)],
                      grid=1, block=16)
    np.testing.assert_array_equal(out, np.abs(x).view(np.int32))
    np.testing.assert_array_equal(halves, h.view(np.uint32))


SHARED = HEADER + """
@ptxpy.func
def total(w: Array[u32]) -> u32:
    s = u32(0)
    for i in range(len(w)):
        s += w[i]
    return s

@ptxpy.func
def put(w: Array[u64], i: i32, v: u64):
    w[i] = v

@ptxpy.jit
def shared_words(x: Array[u8], out: Array[u32], wide: Array[u64]):
    tile = ptxpy.shared_array(64, u8)
    t = ptxpy.thread_idx.x
    tile[t] = x[t]
    ptxpy.syncthreads()
    if t == 0:
        w = tile.view(u32)
        out[0] = total(w)
        out[1] = u32(w.shape[0] + 100 * w.ndim)
    for k in range(2):
        if t == k:
            v = wide.view(u64)
            put(v, k, u64(x[k]) << 40)
"""


def test_views_of_shared_arrays_in_branches_loops_and_device_functions():
    x = np.arange(64, dtype=np.uint8) * 3
    out, wide = run(SHARED, "shared_words", [x, Out(2, np.uint32), Out(2, np.uint64)],
                    grid=1, block=64)
    assert out[0] == x.view(np.uint32).sum(dtype=np.uint32)
    assert out[1] == 16 + 100
    np.testing.assert_array_equal(wide, x[:2].astype(np.uint64) << 40)


ODD = HEADER + """
@ptxpy.jit
def odd(x: Array[u16], out: Array[u64]):
    w = x.view(u64)
    out[0] = w[0]
"""


@pytest.mark.skipif(ON_GPU, reason="the simulator's report of the debug check")
def test_debug_mode_checks_that_the_last_extent_holds_whole_elements():
    (out,) = run(ODD, "odd", [np.arange(8, dtype=np.uint16), Out(1, np.uint64)], grid=1,
                 block=1, debug=True)
    assert out[0] == np.arange(8, dtype=np.uint16).view(np.uint64)[0]
    with pytest.raises(SimulatorError, match=r"x.view\(u64\): the last extent of 'x' \(6 elements "
                                             r"of 2 bytes\) is not a whole number of 8-byte "
                                             r"elements"):
        run(ODD, "odd", [np.arange(6, dtype=np.uint16), Out(1, np.uint64)], grid=1, block=1,
            debug=True)


@ptxpy.jit(out_shape=lambda state: jax.ShapeDtypeStruct(state.shape, jnp.int32), grid=1, block=32,
           interpret=True)
def bump_pairs(state: Array[i32, 2], out: Array[i32, 2]):
    w = state.view(u64)
    o = out.view(u64)
    t = ptxpy.thread_idx.x
    if t < w.shape[0]:
        o[t, 0] = w[t, 0] + u64(1)


def test_views_under_jax_jit_and_vmap():
    state = jnp.arange(24, dtype=jnp.int32).reshape(3, 4, 2)
    want = np.asarray(state).copy()
    want[..., 0] += 1
    np.testing.assert_array_equal(np.asarray(jax.jit(bump_pairs)(state[0])), want[0])
    np.testing.assert_array_equal(np.asarray(jax.vmap(bump_pairs)(state)), want)


def compile_error(body: str) -> str:
    source = HEADER + ("\n@ptxpy.jit\ndef k(x: Array[u32, 2], b: Array[bool], out: Array[u32]):\n"
                       "    loc = ptxpy.local_array(4, u32)\n" + body)
    with pytest.raises(CompileError) as info:
        parsed = parse_module(source, "kernels.py")
        check_kernel(parsed, "k")
        compile_source(source, "k")
    return str(info.value).splitlines()[0]


@pytest.mark.parametrize("body, message", [
    ("    w = x.view(u8)\n",
     "kernels.py:8:16: error: x.view(u8): a view's elements must be at least as wide as the "
     "array's (u32, 4 bytes); pass the array in narrower elements instead "
     "(jax.lax.bitcast_convert_type on the caller's side)"),
    ("    w = x.view(bool)\n",
     "kernels.py:8:16: error: x.view takes a ptxpy scalar type other than bool, such as u64, "
     "got 'bool'"),
    ("    w = x.view(3)\n",
     "kernels.py:8:16: error: x.view takes a ptxpy scalar type other than bool, such as u64, "
     "got '3'"),
    ("    w = x.view()\n", "kernels.py:8:9: error: x.view() takes 1 argument (0 given)"),
    ("    w = b.view(u8)\n",
     "kernels.py:8:9: error: 'b' holds bool; views of bool arrays are not supported"),
    ("    w = x.view(u64)\n    v = w.view(u64)\n",
     "kernels.py:9:9: error: 'w' is itself a view of 'x'; take the view of 'x'"),
    ("    w = x.view(u64)\n    w = x.view(i32)\n",
     "kernels.py:9:9: error: 'w' already names a view of 'x' as u64; use another name"),
    ("    out[0] = x.view(u32)[0, 0]\n",
     "kernels.py:8:14: error: 'x.view(u32)' must be assigned to a variable: w = x.view(u32)"),
    ("    w = loc.view(u64)\n",
     "kernels.py:8:9: error: loc.view(u64): views are of array parameters and shared arrays; "
     "'loc' is a local array"),
    ("    n = 3\n    n = x.view(u64)\n",
     "kernels.py:9:9: error: 'n' is a scalar variable; it cannot also name an array"),
])
def test_view_errors(body, message):
    assert compile_error(body) == message


FUNC_WRITES = HEADER + """
@ptxpy.func
def bump(w: Array[u64], i: i32):
    w[i] = w[i] + u64(1)

@ptxpy.jit
def through_func(x: Array[u32], out: Array[u32]):
    t = ptxpy.thread_idx.x
    out[t] = x[2 * t]
    v = x.view(u64)
    bump(v, t)
"""


def test_an_array_written_through_a_view_in_a_device_function_counts_as_written():
    kernel = compile_source(FUNC_WRITES, "through_func")
    assert "ld.global.nc" not in kernel.ptx
    assert [p.written for p in kernel.params] == [True, True]
    x = np.arange(16, dtype=np.uint32)
    (out,) = run(FUNC_WRITES, "through_func", [x.copy(), Out(8, np.uint32)], grid=1, block=8)
    np.testing.assert_array_equal(out, x[0::2])      # read before the bump
