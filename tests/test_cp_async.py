"""`ptxpy.cp_async(dst, src[, pred])`, `ptxpy.cp_async_commit()`, `ptxpy.cp_async_wait([n])`:
PTX `cp.async` copies from global to shared memory, their groups and waits. Checked against
NumPy in the simulator (on the GPU with PTXPY_TEST_DEVICE=gpu), the simulator's model of a
copy in flight (it lands at the issuing thread's wait), its race check, the checks of
debug=True, the compile-time errors, the PTX and a kernel called through JAX."""
import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ptxpy
from kernel_harness import Out, assemble_all, compile_source, run
from ptxpy import Array, f32
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.transpiler.errors import CompileError

ON_GPU = os.environ.get("PTXPY_TEST_DEVICE") == "gpu"
SIMULATOR_ONLY = pytest.mark.skipif(ON_GPU, reason="the simulator's model; undefined on a GPU")

HEADER = """
import ptxpy
from ptxpy import Array, f16, f32, f64, i32, u8
"""


def line_of(source: str, statement: str) -> int:
    (line,) = [n for n, text in enumerate(source.splitlines(), 1) if statement in text]
    return line


# --- a tile through shared memory ------------------------------------------------------------

# Block b copies rows 8b..8b+7 of x (8 x COLS), one copy of W elements per thread (64 threads),
# then writes the tile flipped in both axes: each thread reads what other threads copied.
FLIP = HEADER + """
@ptxpy.jit
def flip(x: Array[{T}, 2], out: Array[{T}, 2]):
    s = ptxpy.shared_array((8, {COLS}), {T})
    t = ptxpy.thread_idx.x
    r = t // 8
    c = (t % 8) * {W}
    row0 = ptxpy.block_idx.x * 8
    ptxpy.cp_async({DST}, {SRC})
    ptxpy.cp_async_commit()
    ptxpy.cp_async_wait(0)
    ptxpy.syncthreads()
    for k in range({W}):
        out[row0 + r, c + k] = s[7 - r, {COLS} - 1 - c - k]
"""
SLICES = ("s[r, c:c + {W}]", "x[row0 + r, c:c + {W}]")
ELEMENTS = ("s[r, c]", "x[row0 + r, c]")


@pytest.mark.parametrize("T, W, form", [
    ("f32", 4, SLICES), ("f32", 2, SLICES), ("f32", 1, ELEMENTS), ("f16", 8, SLICES),
    ("f64", 1, ELEMENTS), ("u8", 16, SLICES), ("f16", 2, SLICES)])
def test_a_block_copies_a_tile_that_all_its_threads_read(T, W, form):
    """4, 8 and 16 bytes per copy, slices and elements of 2-D arrays: the flipped tiles of
    three blocks equal NumPy's."""
    dtype = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "u8": np.uint8}[T]
    cols = 8 * W
    dst, src = (f.replace("{W}", str(W)) for f in form)
    source = (FLIP.replace("{DST}", dst).replace("{SRC}", src).replace("{T}", T)
              .replace("{COLS}", str(cols)).replace("{W}", str(W)))
    rng = np.random.default_rng(W)
    x = (rng.integers(0, 256, (24, cols)) if T == "u8" else rng.standard_normal((24, cols))).astype(dtype)
    (out,) = run(source, "flip", [x, Out(x.shape, dtype)], grid=3, block=64, racecheck=True)
    np.testing.assert_array_equal(out, x.reshape(3, 8, cols)[:, ::-1, ::-1].reshape(24, cols))


TRANSPOSE = HEADER + """
@ptxpy.jit
def transpose(x: Array[f32], out: Array[f32]):
    # block b: x[256b:256b + 256] as a 16 x 16 tile, written out transposed
    s = ptxpy.shared_array(256, f32)
    t = ptxpy.thread_idx.x
    base = ptxpy.block_idx.x * 256
    ptxpy.cp_async(s[4 * t:4 * t + 4], x[base + 4 * t:base + 4 * t + 4])
    ptxpy.cp_async_commit()
    ptxpy.cp_async_wait(0)
    ptxpy.syncthreads()
    for k in range(4):
        j = 4 * t + k
        out[base + j] = s[(j % 16) * 16 + j // 16]
"""


def test_one_dimensional_slices_and_a_transposed_tile():
    x = np.random.default_rng(1).standard_normal(512).astype(np.float32)
    (out,) = run(TRANSPOSE, "transpose", [x, Out(512, np.float32)], grid=2, block=64)
    np.testing.assert_array_equal(out, x.reshape(2, 16, 16).transpose(0, 2, 1).reshape(-1))


# --- the predicate -----------------------------------------------------------------------------

TAIL = HEADER + """
@ptxpy.jit
def tail(x: Array[f32], out: Array[f32]):
    # block b copies x[64b:64b + 64] where it exists (W elements per copy), zeros past it
    s = ptxpy.shared_array(64, f32)
    t = ptxpy.thread_idx.x
    j = {W} * t
    i = ptxpy.block_idx.x * 64 + j
    ptxpy.cp_async(s[{DST}], x[{SRC}], i + {W} <= len(x))
    ptxpy.cp_async_commit()
    ptxpy.cp_async_wait(0)
    ptxpy.syncthreads()
    for k in range({W}):
        out[ptxpy.block_idx.x * 64 + j + k] = s[63 - j - k]
"""


@pytest.mark.parametrize("W", [1, 2, 4])
@pytest.mark.parametrize("n", [37, 130, 191])
def test_a_false_predicate_reads_nothing_and_fills_zeros(W, n):
    """x ends inside the last block (n not a multiple of W): the copies past the end read
    nothing (the simulator would fault) and leave zeros (shared memory starts as NaN)."""
    dst, src = ("j", "i") if W == 1 else (f"j:j + {W}", f"i:i + {W}")
    source = TAIL.replace("{DST}", dst).replace("{SRC}", src).replace("{W}", str(W))
    x = np.random.default_rng(n).uniform(1, 2, n).astype(np.float32)
    kept = np.zeros(192, np.float32)
    kept[:n // W * W] = x[:n // W * W]
    (out,) = run(source, "tail", [x, Out(192, np.float32)], grid=3, block=64 // W)
    np.testing.assert_array_equal(out, kept.reshape(3, 64)[:, ::-1].reshape(-1))


# --- a multistage ring -------------------------------------------------------------------------

# Block g sums x[g] (tiles of 8 x 32) weighting row q of a tile by q + 1, with the copies of
# tile k + 2 in flight while tile k is summed: a ring of 3 buffers, wait(1).
RING = HEADER + """
@ptxpy.jit
def ring_sums(x: Array[f32, 3], out: Array[f32, 2]):
    g = ptxpy.block_idx.x
    t = ptxpy.thread_idx.x
    r = t // 8
    c = (t % 8) * 4
    tiles = x.shape[1] // 8
    ring = ptxpy.shared_array((3, 8, 32), f32)
    for s in ptxpy.static_range(2):
        ptxpy.cp_async(ring[s, r, c:c + 4], x[g, s * 8 + r, c:c + 4], s < tiles)
        ptxpy.cp_async_commit()
    total = f32(0.0)
    for k in range(tiles):
        ptxpy.cp_async_wait(1)
        ptxpy.syncthreads()
        ahead = k + 2
        ptxpy.cp_async(ring[ahead % 3, r, c:c + 4], x[g, ahead * 8 + r, c:c + 4], ahead < tiles)
        ptxpy.cp_async_commit()
        if t < 32:
            for q in range(8):
                total += ring[k % 3, q, t] * f32(q + 1)
    if t < 32:
        out[g, t] = total
"""


@pytest.mark.parametrize("tiles", [1, 2, 3, 7])
def test_a_ring_of_three_buffers_sums_every_tile(tiles):
    x = np.random.default_rng(tiles).integers(-20, 21, (3, 8 * tiles, 32)).astype(np.float32)
    (out,) = run(RING, "ring_sums", [x, Out((3, 32), np.float32)], grid=3, block=64, racecheck=True)
    weights = np.arange(1, 9, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(out, (x.reshape(3, tiles, 8, 32) * weights).sum(axis=(1, 2)))


@SIMULATOR_ONLY
def test_the_race_check_reports_a_ring_without_its_barrier():
    """Without the barrier a buffer is read while other threads' copies land in it."""
    source = RING.replace("        ptxpy.syncthreads()\n", "")
    assert source != RING
    x = np.ones((1, 32, 32), np.float32)
    with pytest.raises(SimulatorError, match="shared memory race"):
        run(source, "ring_sums", [x, Out((1, 32), np.float32)], grid=1, block=64, racecheck=True)


REFILL_EARLY = HEADER + """
@ptxpy.jit
def refill_early(x: Array[f32], out: Array[f32]):
    s = ptxpy.shared_array(64, f32)
    t = ptxpy.thread_idx.x
    s[t] = x[t]
    ptxpy.syncthreads()
    v = s[63 - t]
    ptxpy.cp_async(s[t], x[64 + t])
    ptxpy.cp_async_commit()
    ptxpy.syncthreads()
    ptxpy.cp_async_wait(0)
    out[t] = v + s[t]
"""


@SIMULATOR_ONLY
def test_the_race_check_reports_a_refill_started_before_the_barrier_that_frees_it():
    """The copy into s[t] may land as soon as it starts, while thread 63 - t still reads s[t]:
    it counts as a store from its start, even where its wait comes after the next barrier."""
    x = np.arange(128, dtype=np.float32)
    with pytest.raises(SimulatorError, match="shared memory race"):
        run(REFILL_EARLY, "refill_early", [x, Out(64, np.float32)], grid=1, block=64,
            racecheck=True)
    fixed = REFILL_EARLY.replace("    v = s[63 - t]\n", "    v = s[63 - t]\n    ptxpy.syncthreads()\n")
    (out,) = run(fixed, "refill_early", [x, Out(64, np.float32)], grid=1, block=64, racecheck=True)
    np.testing.assert_array_equal(out, x[63::-1] + x[64:])


# --- copies in flight (the simulator's model) ------------------------------------------------

IN_FLIGHT = HEADER + """
@ptxpy.jit
def in_flight(x: Array[f32], out: Array[f32, 2]):
    a = ptxpy.shared_array(32, f32)
    b = ptxpy.shared_array(32, f32)
    c = ptxpy.shared_array(32, f32)
    t = ptxpy.thread_idx.x
    ptxpy.cp_async(a[t], x[t])
    ptxpy.cp_async_commit()
    ptxpy.cp_async(b[t], x[32 + t])
    ptxpy.cp_async_commit()
    ptxpy.cp_async(c[t], x[64 + t])
    out[0, t] = a[t]
    out[1, t] = b[t]
    ptxpy.cp_async_wait(1)
    out[2, t] = a[t]
    out[3, t] = b[t]
    ptxpy.cp_async_wait(0)
    out[4, t] = b[t]
    out[5, t] = c[t]
    ptxpy.cp_async_wait()
    out[6, t] = c[t]
"""


@SIMULATOR_ONLY
def test_a_copy_lands_at_the_wait_that_covers_its_group():
    """Before any wait the destinations hold the initial bytes (NaN); wait(1) of two groups
    completes the first only; wait(0) the second but not the uncommitted copy; wait_all that."""
    x = np.arange(1, 97, dtype=np.float32)
    (out,) = run(IN_FLIGHT, "in_flight", [x, Out((7, 32), np.float32)], grid=1, block=32)
    initial = np.full(32, 0xFFFFFFFF, np.uint32)
    for row in (0, 1, 3, 5):
        np.testing.assert_array_equal(out[row].view(np.uint32), initial, err_msg=f"row {row}")
    np.testing.assert_array_equal(out[2], x[:32])
    np.testing.assert_array_equal(out[4], x[32:64])
    np.testing.assert_array_equal(out[6], x[64:])


# --- debug=True --------------------------------------------------------------------------------

CHECKED = HEADER + """
@ptxpy.jit
def checked(x: Array[f32], out: Array[f32], shift: i32, reach: i32, always: i32):
    s = ptxpy.shared_array(32, f32)
    e = ptxpy.shared_array(8, f32)
    t = ptxpy.thread_idx.x
    j = 4 * t
    ptxpy.cp_async(s[j:j + 4], x[j + shift:j + shift + 4])
    ptxpy.cp_async(e[t], x[t + reach], t + reach < len(x) or always != 0)
    ptxpy.cp_async_wait()
    ptxpy.syncthreads()
    out[t] = e[7 - t] + s[31 - t]
"""


def run_checked(shift: int, reach: int, always: int):
    x = np.arange(40, dtype=np.float32)
    return run(CHECKED, "checked", [x, Out(8, np.float32), shift, reach, always], grid=1, block=8,
               debug=True)


def failing_check(shift: int, reach: int) -> str:
    with pytest.raises(SimulatorError) as err:
        run_checked(shift, reach, 1)
    return str(err.value)


# On the GPU a trap leaves the process's CUDA context unusable, failing every GPU test after it
# (the card run of session 39): the traps are the simulator's to check here.
@SIMULATOR_ONLY
def test_debug_traps_a_misaligned_slice():
    message = failing_check(2, 0)
    line = line_of(CHECKED, "x[j + shift:j + shift + 4]")
    assert message.startswith(f"kernels.py:{line}: misaligned vector access to 'x' at element 2 "
                              "(must be a multiple of 4)"), message


@SIMULATOR_ONLY
def test_debug_traps_a_source_index_out_of_bounds():
    message = failing_check(0, 33)
    line = line_of(CHECKED, "x[t + reach]")
    assert message.startswith(f"kernels.py:{line}: index out of bounds: index 40 is not in "
                              "[0, 40) for axis 0 of 'x'"), message


def test_debug_skips_the_source_checks_where_the_predicate_is_false():
    """reach 36: threads 4..7 index x past its end with pred False: no trap, zeros."""
    (out,) = run_checked(0, 36, 0)
    np.testing.assert_array_equal(out, np.array([0, 0, 0, 0, 39, 38, 37, 36]) + np.arange(31, 23, -1))


# --- errors ------------------------------------------------------------------------------------

def compile_error(body: str) -> str:
    with pytest.raises(CompileError) as info:
        compile_source(HEADER + "\n@ptxpy.jit\ndef k(x: Array[f32], h: Array[f16], y: Array[f32]):\n"
                       "    s = ptxpy.shared_array(64, f32)\n    t = ptxpy.thread_idx.x\n" + body, "k")
    return str(info.value).splitlines()[0]


@pytest.mark.parametrize("body, message", [
    ("    ptxpy.cp_async(x[0:4], y[0:4])\n",
     "ptxpy.cp_async copies from global to shared memory: its destination 'x' is in global memory"),
    ("    ptxpy.cp_async(s[0:4], s[4:8])\n",
     "ptxpy.cp_async copies from global to shared memory: its source 's' is in shared memory"),
    ("    ptxpy.cp_async(s[0:4], h[0:4])\n",
     "ptxpy.cp_async copies between arrays of one element type: 's' holds f32, 'h' f16"),
    ("    ptxpy.cp_async(s[0:4], x[0:2])\n",
     "ptxpy.cp_async: the destination has 4 element(s), the source 2"),
    ("    ptxpy.cp_async(s[0:3], x[0:3])\n",
     "ptxpy.cp_async copies 4, 8 or 16 bytes; 3 f32 element(s) are 12"),
    ("    v = x[0]\n    ptxpy.cp_async(v, x[0])\n",
     "the destination of ptxpy.cp_async is an array element or slice"),
    ("    ptxpy.cp_async(s[0], x[0] + 1.0)\n",
     "the source of ptxpy.cp_async is an array element or slice"),
    ("    ptxpy.cp_async_wait(8)\n", "ptxpy.cp_async_wait(n) needs a constant n from 0 to 7"),
    ("    ptxpy.cp_async_wait(-1)\n", "ptxpy.cp_async_wait(n) needs a constant n from 0 to 7"),
])
def test_errors(body, message):
    error = compile_error(body)
    line = 8 + body.count("\n")
    assert re.match(rf"kernels\.py:{line}:\d+: error: {re.escape(message)}", error), error


def test_a_wait_count_that_is_not_a_constant_is_an_error():
    error = compile_error("    ptxpy.cp_async_wait(t)\n")
    assert re.match(r"kernels\.py:9:\d+: error: .*constant", error), error


# --- the PTX -----------------------------------------------------------------------------------

def test_the_ptx_names_each_copy_and_the_groups():
    """16 bytes: cp.async.cg, 4 and 8 bytes: cp.async.ca; a predicated copy gives src-size."""
    source = TAIL.replace("{DST}", "j:j + 4").replace("{SRC}", "i:i + 4").replace("{W}", "4")
    ptx = compile_source(source, "tail").ptx
    assert re.search(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, %r\d+;", ptx), ptx
    assert "cp.async.commit_group;" in ptx and "cp.async.wait_group 0;" in ptx
    ptx = compile_source(IN_FLIGHT, "in_flight").ptx
    assert re.findall(r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 4;", ptx) and \
        "cp.async.cg" not in ptx
    assert ptx.count("cp.async.commit_group;") == 2
    assert "cp.async.wait_group 1;" in ptx and "cp.async.wait_all;" in ptx
    ptx = compile_source(FLIP.replace("{DST}", SLICES[0]).replace("{SRC}", SLICES[1])
                         .replace("{T}", "f32").replace("{COLS}", "16").replace("{W}", "2"), "flip").ptx
    assert re.search(r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 8;", ptx), ptx
    assemble_all(RING, "ring_sums")
    assemble_all(CHECKED, "checked", debug=True)


# --- through JAX -------------------------------------------------------------------------------

@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: x.shape[0] // 64, block=16)
def reverse_chunks(x: Array[f32], out: Array[f32]):
    s = ptxpy.shared_array(64, f32)
    t = ptxpy.thread_idx.x
    base = ptxpy.block_idx.x * 64
    ptxpy.cp_async(s[4 * t:4 * t + 4], x[base + 4 * t:base + 4 * t + 4])
    ptxpy.cp_async_commit()
    ptxpy.cp_async_wait(0)
    ptxpy.syncthreads()
    for k in range(4):
        out[base + 4 * t + k] = s[63 - 4 * t - k] * 2.0


def test_through_jax_eagerly_under_jit_and_under_vmap():
    """A batched launch under vmap offsets the copies' source by the row as well."""
    x = np.random.default_rng(4).standard_normal(256).astype(np.float32)
    expected = x.reshape(4, 64)[:, ::-1].reshape(-1) * 2
    np.testing.assert_array_equal(np.asarray(reverse_chunks(jnp.asarray(x))), expected)
    jitted = jax.jit(lambda v: reverse_chunks(v + 1.0))
    np.testing.assert_array_equal(np.asarray(jitted(jnp.asarray(x))),
                                  (x + np.float32(1)).reshape(4, 64)[:, ::-1].reshape(-1) * 2)
    rows = np.stack([x[:128], -x[128:]])
    np.testing.assert_array_equal(np.asarray(jax.vmap(reverse_chunks)(jnp.asarray(rows))),
                                  rows.reshape(2, 2, 64)[:, :, ::-1].reshape(2, 128) * 2)
