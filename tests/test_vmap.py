"""`jax.vmap` of `@ptxpy.jit` kernels (docs/jax.md, "vmap"): the batch as grid axis z of one
launch of a batched specialisation where the kernel allows it, else in sequence.

The simulator tests count launches through `ptxpy.runtime.interpret.launches`; the `gpu` tests
(skipped without a CUDA GPU) count handler calls and inspect the registered launch plans.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ptxpy
from ptxpy import Array, f32, i32
from ptxpy.runtime import batching, interpret

BLOCK = 32


def _has_gpu() -> bool:
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(not _has_gpu(), reason="no CUDA GPU visible to JAX")


@ptxpy.jit(out_shape=lambda x, y, a: x, grid=lambda x, y, a: (ptxpy.cdiv(x.shape[0], BLOCK),),
           block=BLOCK, interpret=True)
def saxpy(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = a * x[i] + y[i]


# 2-D grid, a row vector `b`, two outputs of different dtypes
@ptxpy.jit(out_shape=lambda x, b: [x, jax.ShapeDtypeStruct(x.shape, jnp.int32)],
           grid=lambda x, b: (ptxpy.cdiv(x.shape[1], 8), ptxpy.cdiv(x.shape[0], 4)), block=(8, 4),
           interpret=True)
def add_row(x: Array[f32, 2], b: Array[f32], out: Array[f32, 2], where: Array[i32, 2]):
    j = ptxpy.global_id(0)
    i = ptxpy.global_id(1)
    if i < x.shape[0] and j < x.shape[1]:
        out[i, j] = x[i, j] + b[j]
        where[i, j] = i * x.shape[1] + j


# reads grid axis z: always in sequence
@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: (ptxpy.cdiv(x.shape[0], BLOCK),), block=BLOCK,
           interpret=True)
def plus_block_z(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = x[i] + f32(ptxpy.block_idx.z) + f32(ptxpy.grid_dim.z)


# a grid with z > 1: in sequence
@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: (1, 1, x.shape[0]), block=1, interpret=True)
def copy_z(x: Array[f32], out: Array[f32]):
    k = ptxpy.global_id(2)
    out[k] = x[k] * 2.0


@ptxpy.jit(out_shape=lambda x, y: x, grid=1, block=BLOCK, input_output_aliases={0: 0},
           interpret=True)
def add_in_place(x: Array[f32], y: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < len(x):
        out[i] = out[i] + y[i]


# vector accesses: batched only when every item is a multiple of 16 bytes
@ptxpy.jit(out_shape=lambda x: x, grid=1, block=BLOCK, interpret=True)
def quad(x: Array[f32], out: Array[f32]):
    i = ptxpy.thread_idx.x * 4
    if i + 4 <= len(x):
        a, b, c, d = x[i:i + 4]
        out[i:i + 4] = (d, c, b, a)


# debug bounds checks see the per-item shape
@ptxpy.jit(out_shape=lambda x: x, grid=1, block=BLOCK, debug=True, interpret=True)
def shifted(x: Array[f32], out: Array[f32]):
    i = ptxpy.thread_idx.x
    if i < len(x):
        out[i] = x[(i + 1) % len(x)]


K = dict(saxpy=saxpy, add_row=add_row, plus_block_z=plus_block_z, copy_z=copy_z,
         add_in_place=add_in_place, quad=quad, shifted=shifted)


def on_gpu(kernel):
    """The same kernel, launched on the GPU."""
    return ptxpy.jit(kernel.fn, out_shape=kernel.out_shape, grid=kernel.grid, block=kernel.block,
                     input_output_aliases=kernel.input_output_aliases, debug=kernel.debug,
                     interpret=False)


rng = np.random.default_rng(7)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


class Launches:
    """Simulator launches made inside the `with` block."""

    def __enter__(self):
        self.start = interpret.launches
        return self

    def __exit__(self, *exc):
        self.count = interpret.launches - self.start


def batched_options(kernel):
    return sorted(key[-1] for key in kernel._compiled if key[-1])


# --- one level -------------------------------------------------------------------------------

def test_vmap_over_one_input_is_one_launch():
    xs, y = rand(5, 70), rand(70)
    with Launches() as n:
        out = jax.vmap(lambda x: K["saxpy"](x, y, 2.0))(xs)
    np.testing.assert_array_equal(out, np.float32(2.0) * xs + y)
    assert n.count == 1
    assert (("out", 1, 0), ("x", 1, 0)) in batched_options(K["saxpy"])
    ptx = next(k for key, k in K["saxpy"]._compiled.items()
               if key[-1] == (("out", 1, 0), ("x", 1, 0))).ptx
    assert "%ctaid.z" in ptx
    assert "%ctaid.z" not in K["saxpy"].ptx(xs[0], y, 2.0)


def test_vmap_over_several_inputs_under_jit():
    xs, ys = rand(4, 100), rand(4, 100)
    with Launches() as n:
        out = jax.jit(jax.vmap(lambda x, y: K["saxpy"](x, y, -0.5)))(xs, ys)
    np.testing.assert_array_equal(out, np.float32(-0.5) * xs + ys)
    assert n.count == 1


def test_vmap_of_jit():
    xs, ys = rand(3, 40), rand(3, 40)
    with Launches() as n:
        out = jax.vmap(jax.jit(lambda x, y: K["saxpy"](x, y, 3.0)))(xs, ys)
    np.testing.assert_array_equal(out, np.float32(3.0) * xs + ys)
    assert n.count == 1


def test_in_axes_1_out_axes_1_and_an_unbatched_array():
    x, b = rand(6, 3, 10), rand(10)               # batch on axis 1 of x
    with Launches() as n:
        out, where = jax.vmap(K["add_row"], in_axes=(1, None), out_axes=1)(x, b)
    np.testing.assert_array_equal(out, x + b)
    np.testing.assert_array_equal(where, np.broadcast_to(np.arange(60).reshape(6, 1, 10), (6, 3, 10)))
    assert n.count == 1
    assert (("out", 1, 0), ("where", 1, 0), ("x", 1, 0)) in batched_options(K["add_row"])


def test_batched_row_vector_only():
    x, bs = rand(5, 9), rand(4, 9)
    with Launches() as n:
        out, _ = jax.vmap(K["add_row"], in_axes=(None, 0))(x, bs)
    np.testing.assert_array_equal(out, x[None] + bs[:, None])
    assert n.count == 1


# --- nested vmap ------------------------------------------------------------------------------

def test_nested_vmap_flattens_into_one_launch():
    xs, ys = rand(3, 4, 50), rand(3, 50)
    inner = jax.vmap(lambda x, y: K["saxpy"](x, y, 2.0), in_axes=(0, None))
    with Launches() as n:
        out = jax.jit(jax.vmap(inner))(xs, ys)
    np.testing.assert_array_equal(out, np.float32(2.0) * xs + ys[:, None])
    assert n.count == 1
    # y is batched by the outer level only: item z // 4, read in place (no broadcast)
    assert (("out", 1, 0), ("x", 1, 0), ("y", 4, 0)) in batched_options(K["saxpy"])


def test_nested_vmap_outer_product():
    xs, ys = rand(3, 30), rand(5, 30)
    f = jax.vmap(jax.vmap(lambda x, y: K["saxpy"](x, y, 1.0), in_axes=(None, 0)), in_axes=(0, None))
    with Launches() as n:
        out = f(xs, ys)
    np.testing.assert_array_equal(out, xs[:, None] + ys[None])
    assert n.count == 1
    assert (("out", 1, 0), ("x", 5, 0), ("y", 1, 5)) in batched_options(K["saxpy"])


def test_three_levels():
    x = rand(2, 3, 4, 20)
    f = lambda v: K["saxpy"](v, v, 1.0)  # noqa: E731
    with Launches() as n:
        out = jax.vmap(jax.vmap(jax.vmap(f)))(x)
    np.testing.assert_array_equal(out, x + x)
    assert n.count == 1


# --- in sequence ------------------------------------------------------------------------------

def test_kernel_reading_grid_z_runs_in_sequence():
    xs = rand(3, 40)
    with Launches() as n:
        out = jax.vmap(K["plus_block_z"])(xs)
    np.testing.assert_array_equal(out, xs + np.float32(1.0))   # block_idx.z 0, grid_dim.z 1
    assert n.count == 3
    assert batched_options(K["plus_block_z"]) == []


def test_grid_with_z_runs_in_sequence():
    xs = rand(4, 6)
    with Launches() as n:
        out = jax.jit(jax.vmap(K["copy_z"]))(xs)
    np.testing.assert_array_equal(out, 2 * xs)
    assert n.count == 4


def test_batched_traced_scalar_runs_in_sequence():
    xs, y, a = rand(4, 33), rand(33), np.arange(4, dtype=np.float32)
    with Launches() as n:
        out = jax.vmap(lambda x, s: K["saxpy"](x, y, s))(xs, a)
    np.testing.assert_array_equal(out, a[:, None] * xs + y)
    assert n.count == 4


def test_unbatched_traced_scalar_is_passed_once():
    xs, y = rand(4, 33), rand(33)
    with Launches() as n:
        out = jax.jit(jax.vmap(lambda x, s: K["saxpy"](x, y, s), in_axes=(0, None)))(xs, 1.5)
    np.testing.assert_array_equal(out, np.float32(1.5) * xs + y)
    assert n.count == 1


def test_nested_with_batched_scalar_runs_outer_level_in_sequence():
    xs, a = rand(2, 3, 16), np.array([2.0, -1.0], np.float32)
    inner = jax.vmap(lambda x, s: K["saxpy"](x, x, s), in_axes=(0, None))
    with Launches() as n:
        out = jax.vmap(inner)(xs, a)
    np.testing.assert_array_equal(out, a[:, None, None] * xs + xs)
    assert n.count == 2          # the inner level batched, the outer one in sequence


def test_vector_accesses_need_aligned_items():
    ok, odd = rand(3, 8), rand(3, 6)            # 32-byte items; 24-byte items
    expected = lambda x: np.concatenate([x[..., 3::-1], x[..., 7:3:-1]], -1)  # noqa: E731
    with Launches() as n:
        out = jax.vmap(K["quad"])(ok)
    np.testing.assert_array_equal(out, expected(ok))
    assert n.count == 1
    with Launches() as n:
        out = jax.vmap(K["quad"])(odd)
    np.testing.assert_array_equal(np.asarray(out)[:, :4], odd[:, 3::-1])
    assert n.count == 3


def test_too_large_a_batch_runs_in_sequence():
    call = batching.Call(K["saxpy"].compiled(rand(8), rand(8), 1.0), [], [], [], [],
                         (1, 1, 1), None)
    assert batching.why_sequential(call, batching.MAX_BATCH, ()) is None
    assert "65536 items" in batching.why_sequential(call, batching.MAX_BATCH + 1, ())


# --- aliases, debug, eager --------------------------------------------------------------------

def test_aliases_under_vmap():
    xs, ys = rand(3, 20), rand(3, 20)
    with Launches() as n:
        out = jax.vmap(K["add_in_place"])(xs, ys)
    np.testing.assert_array_equal(out, xs + ys)
    assert n.count == 1
    with Launches() as n:                      # the aliased input unbatched: repeated per item
        out = jax.jit(jax.vmap(K["add_in_place"], in_axes=(None, 0)))(xs[0], ys)
    np.testing.assert_array_equal(out, xs[0] + ys)
    assert n.count == 1
    with Launches() as n:                      # nested, aliased input batched by the outer level
        out = jax.vmap(jax.vmap(K["add_in_place"], in_axes=(None, 0)), in_axes=(0, None))(xs, ys)
    np.testing.assert_array_equal(out, xs[:, None] + ys[None])
    assert n.count == 1


def test_debug_checks_use_the_item_shape():
    xs = rand(4, 10)
    with Launches() as n:
        out = jax.vmap(K["shifted"])(xs)
    np.testing.assert_array_equal(out, np.roll(xs, -1, axis=1))
    assert n.count == 1


def test_empty_batch():
    with Launches() as n:
        out = jax.jit(jax.vmap(lambda x: K["saxpy"](x, x, 2.0)))(np.zeros((0, 10), np.float32))
    assert out.shape == (0, 10) and n.count == 0


def test_eager_and_jit_calls_are_unchanged():
    x, y = rand(50), rand(50)
    np.testing.assert_array_equal(K["saxpy"](x, y, 2.0), np.float32(2.0) * x + y)
    np.testing.assert_array_equal(jax.jit(K["saxpy"])(x, y, 2.0), np.float32(2.0) * x + y)


# --- GPU --------------------------------------------------------------------------------------

@gpu
@needs_gpu
def test_vmap_on_gpu_is_one_launch_with_grid_z():
    from ptxpy.runtime import ffi

    G = {name: on_gpu(k) for name, k in K.items()}
    xs, ys = jnp.asarray(rand(6, 1000)), jnp.asarray(rand(6, 1000))
    expected = 2.0 * np.asarray(xs, np.float64) + np.asarray(ys, np.float64)
    before = ffi.calls
    out = jax.block_until_ready(jax.vmap(lambda x, y: G["saxpy"](x, y, 2.0))(xs, ys))
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert ffi.calls - before == 1                       # eager: one handler call, one launch
    plans = [p for p in ffi._plans.values() if p.kernel == "saxpy" and p.grid[2] == 6]
    assert plans and plans[-1].grid == (ptxpy.cdiv(1000, BLOCK), 1, 6)
    # under jit, in_axes=1, an unbatched array, nested, several outputs
    np.testing.assert_allclose(jax.jit(jax.vmap(lambda x, y: G["saxpy"](x, y, 2.0)))(xs, ys),
                               expected, rtol=1e-6)
    x, b = rand(6, 3, 10), rand(10)
    out, where = jax.jit(jax.vmap(G["add_row"], in_axes=(1, None), out_axes=1))(x, b)
    np.testing.assert_allclose(out, x + b, rtol=1e-6)
    np.testing.assert_array_equal(where, np.broadcast_to(np.arange(60).reshape(6, 1, 10), (6, 3, 10)))
    x3, y2 = rand(3, 4, 500), rand(3, 500)
    out = jax.jit(jax.vmap(jax.vmap(lambda x, y: G["saxpy"](x, y, 1.0), in_axes=(0, None))))(x3, y2)
    np.testing.assert_allclose(out, x3 + y2[:, None], rtol=1e-6)
    assert any(p.kernel == "saxpy" and p.grid[2] == 12 for p in ffi._plans.values())
    # aliases with donation, fallbacks, vector accesses
    donated = jnp.asarray(rand(3, 20))
    expect = np.asarray(donated) + np.asarray(ys[:3, :20])
    out = jax.jit(jax.vmap(G["add_in_place"]), donate_argnums=0)(donated, ys[:3, :20])
    np.testing.assert_allclose(out, expect, rtol=1e-6)
    np.testing.assert_array_equal(jax.vmap(G["plus_block_z"])(xs), np.asarray(xs) + 1.0)
    np.testing.assert_array_equal(jax.jit(jax.vmap(G["copy_z"]))(xs[:, :5]), 2 * np.asarray(xs[:, :5]))
    a = jnp.arange(6, dtype=jnp.float32)
    np.testing.assert_allclose(jax.vmap(lambda x, s: G["saxpy"](x, ys[0], s))(xs, a),
                               np.asarray(a)[:, None] * np.asarray(xs) + np.asarray(ys[0]),
                               rtol=1e-6)
    assert jax.vmap(lambda x: G["saxpy"](x, x, 2.0))(jnp.zeros((0, 10), jnp.float32)).shape == (0, 10)
    q8, q6 = rand(5, 8), rand(5, 6)
    np.testing.assert_array_equal(jax.vmap(G["quad"])(q8)[:, :4], q8[:, 3::-1])
    np.testing.assert_array_equal(jax.vmap(G["quad"])(q6)[:, :4], q6[:, 3::-1])


# --- derivatives ---------------------------------------------------------------------------------

def test_vmap_and_grad_of_a_kernel_name_it():
    xs = rand(3, 40)

    def total(x):
        return K["saxpy"](x, x, 2.0).sum()

    for transform in (jax.grad(lambda x: jax.vmap(lambda r: K["saxpy"](r, r, 2.0))(x).sum()),
                      jax.vmap(jax.grad(total))):
        with pytest.raises(TypeError, match="^ptxpy kernel 'saxpy' has no derivative rule"):
            transform(xs)


def test_a_custom_vjp_around_a_vmapped_kernel_still_batches_it():
    @jax.custom_vjp
    def twice_plus_one(x):
        return jax.vmap(lambda r: K["saxpy"](r, jnp.ones_like(r), 2.0))(x)

    twice_plus_one.defvjp(lambda x: (twice_plus_one(x), None), lambda _, g: (2.0 * g,))
    xs = rand(4, 40)
    with Launches() as n:
        grad = jax.grad(lambda x: twice_plus_one(x).sum())(xs)
    np.testing.assert_array_equal(grad, np.full_like(xs, 2.0))
    assert n.count == 1


def test_vmap_of_a_numpy_array_inside_jit():
    """`jax.vmap` batches a NumPy array as a tracer holding it; under `jax.jit` the launch's
    custom_jvp refused that with JAX's own assertion ('non-canonical constant')."""
    x = np.arange(3 * 40, dtype=np.float32).reshape(3, 40)
    y = np.ones(40, np.float32)
    got = jax.jit(lambda: jax.vmap(saxpy, in_axes=(0, None, None))(x, y, 2.0))()
    np.testing.assert_array_equal(np.asarray(got), 2 * x + y)
    with pytest.raises(TypeError, match="has no derivative rule"):   # still its own error
        jax.grad(lambda a: jax.vmap(saxpy, in_axes=(0, None, None))(x, y, a).sum())(2.0)
