"""Fuzzing the decorator's calls: any arguments give the kernel's outputs or an error that names
the kernel (TypeError, ValueError, CompileError), or the simulator's out-of-bounds error at the
kernel's line where the arrays' lengths disagree, never another exception. The kernels run in
the simulator; the arguments are arrays of any dtype and rank (NumPy and JAX, 0-d ones
included), numbers, `jax.ShapeDtypeStruct`s and other objects, by position and by keyword.
A call that runs computes what NumPy does on its own arguments, whatever calls came before it
(whose call plans it may reuse).
"""
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import ptxpy
from ptxpy import Array, Const, f16, f32, i32, u8
from ptxpy.runtime.simulator import SimulatorError


@ptxpy.jit(out_shape=lambda x, y, a: x, grid=lambda x, y, a: ptxpy.cdiv(x.shape[0], 64),
           block=64, interpret=True)
def axpy(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = a * x[i] + y[i]


@ptxpy.jit(out_shape=lambda m, k: jax.ShapeDtypeStruct((m.shape[0],), jnp.int32),
           grid=lambda m, k: ptxpy.cdiv(m.shape[0], 32), block=32, interpret=True)
def row_sums(m: Array[u8, 2], k: Const[int], out: Array[i32]):
    r = ptxpy.global_id(0)
    if r < m.shape[0]:
        s = 0
        for j in range(m.shape[1]):
            s += i32(m[r, j]) * k
        out[r] = s


@ptxpy.jit(out_shape=lambda h, n: (h, jax.ShapeDtypeStruct((1,), jnp.float32)),
           grid=lambda h, n: ptxpy.cdiv(h.shape[0], 8), block=8, interpret=True,
           input_output_aliases={0: 0})
def doubled(h: Array[f16], n: i32, out: Array[f16], total: Array[f32]):
    i = ptxpy.global_id(0)
    if i < n and i < h.shape[0]:
        out[i] = h[i] * f16(2.0)
        ptxpy.atomic_add(total, 0, f32(h[i]))


KERNELS = {"axpy": axpy, "row_sums": row_sums, "doubled": doubled}
NAMES = ["x", "y", "a", "m", "k", "h", "n", "out", "total", "z"]
DTYPES = [np.float32, np.float16, np.uint8, np.int32, np.float64, np.int64, np.bool_, np.complex64]
JAX_DTYPES = [np.float32, np.float16, np.uint8, np.int32, np.bool_]


def arrays(make, dtypes):
    shapes = st.lists(st.sampled_from([0, 1, 3, 8, 65]), max_size=3).map(tuple)
    return st.builds(lambda shape, dtype: make(np.zeros(shape, dtype)), shapes,
                     st.sampled_from(dtypes))


ARGUMENTS = st.one_of(
    arrays(np.asarray, DTYPES),
    arrays(jnp.asarray, JAX_DTYPES),
    st.sampled_from([0, 1, -1, 3, 2**31, 2**70, 0.0, -0.0, 1.5, float("nan"), float("inf"), 1e40,
                     True, None, "a", b"x", [1, 2], (1,), {}, np.float32(0.5), np.int64(2**40),
                     np.float16(1.0), jnp.asarray(3, jnp.int32)]),
    st.builds(jax.ShapeDtypeStruct, st.lists(st.integers(0, 9), max_size=2).map(tuple),
              st.sampled_from([np.float32, np.uint8])),
    st.builds(lambda n: np.arange(n, dtype=np.float32), st.sampled_from([1, 8, 64, 100])),
    st.builds(lambda r, c: np.ones((r, c), np.uint8), st.integers(1, 4), st.integers(1, 5)),
    st.builds(lambda n: np.ones(n, np.float16), st.sampled_from([1, 8, 16])),
)
VALID_ARGUMENTS = {
    "axpy": (["x", "y", "a"], lambda n: [np.arange(n, dtype=np.float32), np.ones(n, np.float32), 2.0]),
    "row_sums": (["m", "k"], lambda n: [np.ones((n, 3), np.uint8), 2]),
    "doubled": (["h", "n"], lambda n: [np.ones(n, np.float16), 4]),
}
CALLS = settings(max_examples=int(os.environ.get("PTXPY_FUZZ_EXAMPLES", 300)) // 2,
                 deadline=None, suppress_health_check=list(HealthCheck))


def check_outputs(name: str, args: list, kwargs: dict, outs) -> None:
    """A call that ran computed what NumPy does on its arguments (calls made with other
    arguments before, whose plans it may reuse, must not show through)."""
    params, _ = VALID_ARGUMENTS[name]
    bound = {p: np.asarray(v) for p, v in zip(params, args)}
    bound.update((p, np.asarray(v)) for p, v in kwargs.items())
    with np.errstate(all="ignore"):
        if name == "axpy":
            x, y = bound["x"], bound["y"]
            want = np.float32(bound["a"]) * x + y[:x.shape[0]]
        elif name == "row_sums":
            sums = (bound["m"].astype(np.int64) * int(bound["k"])).sum(axis=1)
            want = ((sums + 2**31) % 2**32 - 2**31).astype(np.int32)
        else:
            h, count = bound["h"], max(0, min(int(bound["n"]), bound["h"].shape[0]))
            want = h.copy()
            want[:count] = h[:count] * np.float16(2)
            outs = outs[0]      # (`total` is not initialised: its sum is left unchecked)
    np.testing.assert_array_equal(np.asarray(outs), want)


@st.composite
def calls(draw):
    """(kernel name, args, kwargs): a valid call with up to three edits."""
    name = draw(st.sampled_from(sorted(KERNELS)))
    params, make = VALID_ARGUMENTS[name]
    args, kwargs = make(draw(st.sampled_from([1, 8, 65]))), {}
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))):
        edit = draw(st.sampled_from(["replace", "delete", "append", "keyword", "jax", "name"]))
        k = draw(st.integers(0, max(0, len(args) - 1)))
        if edit == "replace" and args:
            args[k] = draw(ARGUMENTS)
        elif edit == "delete" and args:
            del args[k]
        elif edit == "append":
            args.append(draw(ARGUMENTS))
        elif edit == "keyword" and args:
            last = params[len(args) - 1] if len(args) <= len(params) else "z"
            kwargs[last] = args.pop()
        elif edit == "jax" and args and (isinstance(args[k], np.ndarray) or (
                type(args[k]) in (int, float) and abs(args[k]) < 2**31)):
            args[k] = jnp.asarray(args[k])
        elif edit == "name":
            kwargs[draw(st.sampled_from(NAMES))] = draw(ARGUMENTS)
    return name, args, kwargs


@CALLS
@given(st.one_of(calls(), st.tuples(st.sampled_from(sorted(KERNELS)), st.lists(ARGUMENTS, max_size=4),
                                    st.dictionaries(st.sampled_from(NAMES), ARGUMENTS, max_size=1))),
       st.sampled_from(["call", "ptx"]))
def test_any_call_gives_outputs_or_an_error_that_names_the_kernel(call, how):
    name, args, kwargs = call
    kernel = KERNELS[name]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if how == "call":
                outs = jax.block_until_ready(kernel(*args, **kwargs))
                check_outputs(name, args, kwargs, outs)
            else:
                assert ".entry " + name in kernel.ptx(*args, **kwargs)
        event(f"{how}: ran")
    except ptxpy.CompileError as err:
        event(f"{how}: CompileError")
        assert ": error: " in str(err).splitlines()[0]
    except SimulatorError as err:    # the kernels trust their arguments' lengths, as CUDA's do
        event(f"{how}: SimulatorError")
        assert str(err).startswith(f"{__file__}:") and "out-of-bounds" in str(err), err
    except (TypeError, ValueError) as err:
        event(f"{how}: {type(err).__name__}")
        assert name in str(err), err


@st.composite
def valid_calls(draw):
    """(kernel name, args, kwargs) of a call that must run: sizes, scalars (-0.0, nan, inf, NumPy
    and 0-d JAX ones) and Const values vary, the last argument may go by keyword."""
    name = draw(st.sampled_from(sorted(KERNELS)))
    size = draw(st.sampled_from([1, 8, 65]))
    if name == "axpy":
        args = [np.arange(size, dtype=np.float32) - 3, np.ones(size, np.float32),
                draw(st.sampled_from([2.0, -0.0, 0.0, float("nan"), 3, np.float32(0.5), 1e40]))]
    elif name == "row_sums":
        args = [np.arange(size * 3, dtype=np.uint8).reshape(size, 3),
                draw(st.sampled_from([0, 1, 2, -3, 2**31 - 1, np.int32(5), np.asarray(7),
                                      np.asarray(11), jnp.asarray(9), jnp.asarray(13)]))]
    else:
        args = [np.arange(size, dtype=np.float16),
                draw(st.sampled_from([0, 4, 100, -1, np.int32(2), jnp.asarray(3)]))]
    kwargs = {}
    if draw(st.booleans()):
        last = VALID_ARGUMENTS[name][0][len(args) - 1]
        kwargs[last] = args.pop()
    if draw(st.booleans()):
        args = [jnp.asarray(a) if isinstance(a, np.ndarray) and a.ndim else a for a in args]
    return name, args, kwargs


@CALLS
@given(st.lists(valid_calls(), min_size=1, max_size=6))
def test_sequences_of_calls_compute_what_numpy_does(calls):
    """Each call's outputs from its own arguments, whatever calls came before (call plans)."""
    for name, args, kwargs in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_outputs(name, args, kwargs, KERNELS[name](*args, **kwargs))
