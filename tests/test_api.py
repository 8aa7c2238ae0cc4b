"""`@ptxpy.jit` without a GPU: `.ptx`, `.transpile`, and interpret mode from JAX (SPEC 2.6)."""
import functools
import inspect
import logging
import os
import re
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import ptxpy
from ptxpy import Array, Const, bf16, f16, f32, f64, i8, i32, i64, u8, u16, u64
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.transpiler import driver

BLOCK = 64


@ptxpy.jit(out_shape=lambda x, y, a: x, grid=lambda x, y, a: (ptxpy.cdiv(x.shape[0], BLOCK),),
           block=BLOCK, interpret=True)
def saxpy(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = a * x[i] + y[i]


@ptxpy.jit(out_shape=lambda x, n=2: [x, jax.ShapeDtypeStruct(x.shape, jnp.int32)],
           grid=1, block=BLOCK, interpret=True)
def two_outputs(x: Array[f32], out: Array[f32], idx: Array[i32], n: Const[int] = 2):
    i = ptxpy.global_id(0)
    if i < len(x):
        out[i] = x[i] * n
        idx[i] = i * n


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=BLOCK, input_output_aliases={0: 0}, interpret=True)
def add_one_in_place(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < len(x) and i % 2 == 0:
        out[i] = out[i] + 1.0


def data(n=100):
    rng = np.random.default_rng(0)
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def test_ptx_and_transpile_need_no_gpu():
    x, y = data()
    text = saxpy.ptx(x, y, 2.0)
    assert ".visible .entry saxpy(" in text
    spec = jax.ShapeDtypeStruct((100,), jnp.float32)
    assert saxpy.transpile(spec, spec, 2.0) == text


def test_eager_call_in_interpret_mode_matches_numpy():
    x, y = data()
    np.testing.assert_array_equal(np.asarray(saxpy(x, y, 3.0)), np.float32(3.0) * x + y)


def test_under_jax_jit_with_traced_scalar_and_no_retranspile():
    x, y = data()
    f = jax.jit(saxpy)
    np.testing.assert_array_equal(np.asarray(f(x, y, 2.0)), np.float32(2.0) * x + y)
    before = len(saxpy._compiled)
    np.testing.assert_array_equal(np.asarray(f(x, y, 5.0)), np.float32(5.0) * x + y)
    assert len(saxpy._compiled) == before


def test_under_vmap():
    x = np.stack(data(64))
    y = np.ones_like(x)
    out = jax.vmap(lambda a, b: saxpy(a, b, 2.0))(x, y)
    np.testing.assert_array_equal(np.asarray(out), 2.0 * x + 1.0)


def test_multiple_outputs_and_const_by_keyword():
    x, _ = data(50)
    out, idx = two_outputs(x, n=3)
    np.testing.assert_array_equal(np.asarray(out), x * 3)
    np.testing.assert_array_equal(np.asarray(idx), np.arange(50) * 3)
    out2, idx2 = two_outputs(x)
    np.testing.assert_array_equal(np.asarray(idx2), np.arange(50) * 2)


def test_input_output_aliases():
    x, _ = data(50)
    out = add_one_in_place(x)
    expected = x.copy()
    expected[::2] += 1
    np.testing.assert_array_equal(np.asarray(out), expected)


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=BLOCK, input_output_aliases={0: 0}, interpret=True)
def shift_in_place(x: Array[f32], out: Array[f32]):
    i = ptxpy.thread_idx.x
    out[i] = x[(i + 1) % BLOCK] + 1.0


@ptxpy.jit(out_shape=lambda x, y: y, grid=1, block=BLOCK, interpret=True)
def scribble(x: Array[f32], y: Array[f32], out: Array[f32]):
    i = ptxpy.thread_idx.x
    if i > BLOCK:       # never true: the check is made on what the kernel can write
        ptxpy.atomic_add(x, 0, 1.0)
    out[i] = y[i]


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=BLOCK, input_output_aliases={0: 0}, interpret=True)
def scribble_in_place(x: Array[f32], out: Array[f32]):
    ptxpy.atomic_add(x, ptxpy.thread_idx.x, 1.0)


def test_an_input_aliased_to_an_output_is_not_read_through_the_read_only_path():
    """The read-only (non-coherent) path may return stale data for memory the kernel writes:
    an input that shares an output's memory is read with plain loads."""
    x = np.arange(BLOCK, dtype=np.float32)
    assert "ld.global.nc.f32" in saxpy.ptx(x, x, 1.0)      # inputs of their own
    aliased = shift_in_place.ptx(x)
    assert "ld.global.nc" not in aliased and "ld.global.f32" in aliased
    np.testing.assert_array_equal(np.asarray(shift_in_place(x)), np.roll(x, -1) + 1)


def test_writing_to_an_input_that_is_not_an_output_is_an_error():
    x = np.zeros(BLOCK, np.float32)
    with pytest.raises(ValueError, match=r"writes to its input array 'x'.*input_output_aliases=\{0: "):
        scribble(x, x)
    # aliased to an output it may be written: the output is x's memory
    np.testing.assert_array_equal(np.asarray(scribble_in_place(x)), x + 1)


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=1, interpret=True)
def bad_header(x: Array[f32] = None, out: Array[f32] = None):
    out[0] = x[0]


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=1, interpret=True)
def rank_five(x: Array[f32, 5], out: Array[f32]):
    out[0] = 1.0


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=1, interpret=True)
def const_of_str(x: Array[f32], out: Array[f32], n: Const[str] = 1):
    out[0] = 1.0


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=1, interpret=True)
@functools.lru_cache
def cached(x: Array[f32], out: Array[f32]):
    out[0] = x[0]


@pytest.mark.parametrize("kernel, message", [
    (rank_five, r"Array\[T, R\] takes an element type and a rank from 1 to 4\n"
                r"def rank_five\(x: Array\[f32, 5\], out: Array\[f32\]\):\n {17}\^"),
    (const_of_str, r"Const\[...\] takes int, float or bool\n.*\n {58}\^"),
    (cached, r"unsupported decorator '@functools.lru_cache' on a ptxpy function"),
])
def test_a_bad_annotation_or_decorator_is_located_at_the_call_not_at_import(kernel, message):
    """Python evaluates `Array[f32, 5]` when it defines the function, and `inspect` cannot
    read the source of an lru_cache wrapper: both used to raise a bare TypeError."""
    with pytest.raises(ptxpy.CompileError, match=r"test_api\.py:\d+:\d+: error: " + message):
        kernel(np.ones(1, np.float32))


def test_an_error_in_the_kernels_header_is_located_without_compiler_frames():
    with pytest.raises(ptxpy.CompileError, match=r"test_api\.py:\d+:\d+: error: .*default") as info:
        bad_header(np.ones(1, np.float32))
    frames = [str(entry.path) for entry in info.traceback]
    ours = [path for path in frames if "/ptxpy/" in path or "/runtime/" in path or "/transpiler/" in path]
    assert len(ours) == 1 and ours[0].endswith("api.py"), frames


def test_wrong_arguments_are_clear_errors():
    x, y = data()
    with pytest.raises(TypeError, match="dtype f32"):
        saxpy(x.astype(np.float64), y, 1.0)
    with pytest.raises(ValueError, match="saxpy: argument 'x' must have rank 1, got shape \\(10, 10\\)"):
        saxpy(x.reshape(10, 10), y, 1.0)
    with pytest.raises(TypeError, match="saxpy.*missing"):
        saxpy(x, y)


@pytest.mark.parametrize("a, got", [("two", r"got 'two' \(str\)"), (1j, r"got 1j \(complex\)"),
                                    (np.ones(3, np.float32), r"got an array of shape \(3,\)"),
                                    (np.complex64(1), "got a complex64 value")])
def test_scalar_argument_of_the_wrong_kind_is_rejected_before_launch(a, got):
    x, y = data()
    with pytest.raises(TypeError, match=rf"saxpy: argument 'a' is a scalar \(f32\), {got}"):
        saxpy(x, y, a)


@pytest.mark.parametrize("a", [2, 2.0, True, np.float64(2.0), np.int32(2), np.array(2.0),
                               jnp.float32(2.0)])
def test_scalar_argument_accepts_real_numbers_and_0d_arrays(a):
    x, y = data()
    np.testing.assert_allclose(np.asarray(saxpy(x, y, a)), np.float32(float(a)) * x + y, rtol=1e-6)


@ptxpy.jit(out_shape=lambda x, y, a: x[: len(x) // 0], grid=1, block=BLOCK)
def divided(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
    out[0] = a


def test_failing_out_shape_function_names_the_argument_problem():
    x, y = data()
    with pytest.raises(TypeError, match="saxpy: argument 'x' must be an array, got NoneType"):
        saxpy(None, y, 1.0)
    with pytest.raises(TypeError, match="saxpy: argument 'x' must be an array, got list"):
        saxpy([1.0, 2.0], y, 1.0)
    with pytest.raises(TypeError, match="saxpy: argument 'x' must be an array, got list"):
        saxpy(list(x), y, 1.0)    # NumPy scalars: out_shape's `x` reads as many outputs
    with pytest.raises(TypeError, match="saxpy: argument 'y' must be an array, got float"):
        saxpy(x, 2.0, 1.0)
    with pytest.raises(TypeError, match="divided: out_shape could not be computed for this call: "
                                        "ZeroDivisionError"):
        divided(x, y, 1.0)
    with pytest.raises(TypeError, match="argument 'x' must have dtype f32, got complex64"):
        saxpy.ptx(jax.ShapeDtypeStruct((8,), jnp.complex64), y, 1.0)


@ptxpy.jit(out_shape=lambda x: [x, x], grid=lambda x: ptxpy.cdiv(len(x), BLOCK), block=BLOCK,
           input_output_aliases={0: 1}, interpret=True)
def negate_twice(x: Array[f32], out: Array[f32], again: Array[f32]):
    i = ptxpy.global_id(0)
    if i < len(x):
        out[i] = -x[i]
        again[i] = -x[i]


@pytest.mark.parametrize("wrap", [lambda f: f, jax.jit])
def test_a_grid_without_blocks_launches_nothing(wrap):
    empty = np.zeros(0, np.float32)
    out, again = wrap(negate_twice)(empty)
    assert out.shape == again.shape == (0,) and out.dtype == jnp.float32
    x = np.arange(1, 5, dtype=np.float32)
    stopped = ptxpy.jit(negate_twice.fn, out_shape=lambda x: [x, x], grid=(1, 0), block=BLOCK,
                        input_output_aliases={0: 1}, interpret=True)
    out, again = wrap(stopped)(x)
    np.testing.assert_array_equal(np.asarray(out), np.zeros(4, np.float32))
    np.testing.assert_array_equal(np.asarray(again), x)         # its aliased input, unchanged
    with pytest.raises(ValueError, match="grid must be a non-negative int"):
        ptxpy.jit(negate_twice.fn, out_shape=lambda x: [x, x], grid=-1, block=BLOCK)(x)
    with pytest.raises(ValueError, match="block must be a positive int"):
        ptxpy.jit(negate_twice.fn, out_shape=lambda x: [x, x], grid=1, block=0)(x)


@ptxpy.jit(out_shape=lambda x, y, a: x, grid=2, block=BLOCK, interpret=False)
def saxpy2(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = a * x[i] + y[i]


def test_environment_variable_forces_interpret(monkeypatch):
    monkeypatch.setenv("PTXPY_INTERPRET", "1")
    x, y = data()
    np.testing.assert_array_equal(np.asarray(saxpy2(x, y, 2.0)), np.float32(2.0) * x + y)


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=BLOCK, interpret=True)
def rotate_without_barrier(x: Array[f32], out: Array[f32]):
    i = ptxpy.thread_idx.x
    s = ptxpy.shared_array(BLOCK, f32)
    s[i] = x[i]
    out[i] = s[(i + 1) % BLOCK]


def test_race_check_environment_variable_reaches_interpret_mode(monkeypatch):
    """PTXPY_SIM_RACECHECK=1 checks interpret-mode kernels for shared-memory races (the
    simulator runs a block's threads in step, so without it the missing barrier goes unseen)."""
    x = np.arange(BLOCK, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(rotate_without_barrier(x)), np.roll(x, -1))
    lines, first = inspect.getsourcelines(rotate_without_barrier.fn)
    load_line = first + next(k for k, line in enumerate(lines) if "out[i] = s[" in line)
    monkeypatch.setenv("PTXPY_SIM_RACECHECK", "1")
    with pytest.raises(SimulatorError, match=rf"^\S*test_api\.py:{load_line}: shared memory race: thread "
                                             r"\(0,0,0\) reads 4 bytes at shared offset 0x4 that "
                                             r"thread \(1,0,0\) wrote since the last barrier; "
                                             r"block \(0,0,0\)$"):
        rotate_without_barrier(x)


def test_host_side_helpers():
    assert ptxpy.cdiv(10, 4) == 3 and list(ptxpy.static_range(3)) == [0, 1, 2]
    with pytest.raises(RuntimeError, match="inside"):
        ptxpy.global_id(0)


def load_module(path):
    """Import the Python file `path` as a module of its own (its kernels' source is that file)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compile_errors_from_a_call_carry_no_compiler_frames(tmp_path, monkeypatch):
    import traceback

    from ptxpy.transpiler.errors import CompileError

    path = tmp_path / "bad_kernel.py"
    path.write_text("import ptxpy\nfrom ptxpy import Array, f32\n\n"
                    "@ptxpy.jit(out_shape=lambda x: x, grid=1, block=4)\n"
                    "def k(x: Array[f32], out: Array[f32]):\n"
                    "    out[0] = x[0] + undefined_name\n")
    module = load_module(path)
    monkeypatch.delenv("PTXPY_TRACEBACK", raising=False)
    with pytest.raises(CompileError) as info:
        module.k.ptx(np.zeros(4, np.float32))
    assert str(info.value).startswith(f"{path}:6:21: error: name 'undefined_name' is not defined")
    frames = [f.filename for f in traceback.extract_tb(info.value.__traceback__)]
    assert not any("transpiler" in f for f in frames), frames
    with pytest.raises(CompileError) as info:     # ptxpy.transpile likewise
        ptxpy.transpile(path.read_text(), str(path))
    assert str(info.value).startswith(f"{path}:6:21: error: name 'undefined_name' is not defined")
    frames = [f.filename for f in traceback.extract_tb(info.value.__traceback__)]
    assert not any("transpiler" in f for f in frames), frames


@ptxpy.jit(out_shape=lambda x: jax.ShapeDtypeStruct((2**31,), jnp.float32), grid=1, block=1)
def big(x: Array[f32], out: Array[f32]):
    out[0] = x[0]


def test_extents_beyond_i32_are_rejected_before_compiling():
    with pytest.raises(ValueError, match=r"output 'out' has shape \(2147483648,\); each extent must be below 2\*\*31"):
        big.transpile(jax.ShapeDtypeStruct((4,), jnp.float32))


SCALE_SOURCE = '''
import ptxpy
from ptxpy import Array, Const, f32

@ptxpy.jit
def scale(x: Array[f32], out: Array[f32], K: Const[int] = 3):
    i = ptxpy.global_id(0)
    out[i] = x[i] * K  # ×K
'''


def test_transpile_takes_source_bytes_as_python_decodes_them():
    text = ptxpy.transpile(SCALE_SOURCE)["scale"]
    assert ptxpy.transpile(SCALE_SOURCE.encode())["scale"] == text
    latin = ("# -*- coding: latin-1 -*-\n" + SCALE_SOURCE.replace("×", "é")).encode("latin-1")
    assert ".visible .entry scale(" in ptxpy.transpile(latin)["scale"]
    with pytest.raises(ptxpy.CompileError) as err:
        ptxpy.transpile(SCALE_SOURCE.replace("×", "é").encode("latin-1"), "k.py")
    assert str(err.value).splitlines()[0] == (
        "k.py:8:26: error: byte 0xe9 cannot be decoded as utf-8 "
        "(save the file as UTF-8 or declare its encoding)")


@pytest.mark.parametrize("kwargs, message", [
    ({"source": None}, "source must be a str or bytes, not NoneType"),
    ({"filename": None}, "filename must be a str, not NoneType"),
    ({"defines": [("K", 1)]}, "defines must be a dict of Const values, not list"),
    ({"arch": 90}, "arch must be a str such as 'sm_90', not int"),
    ({"debug": "no"}, r"debug must be True or False, got 'no' \(str\)"),
    ({"fast_math": 1}, r"fast_math must be True or False, got 1 \(int\)"),
])
def test_transpile_arguments_of_the_wrong_kind_are_type_errors(kwargs, message):
    call = {"source": SCALE_SOURCE, **kwargs}
    with pytest.raises(TypeError, match=message):
        ptxpy.transpile(**call)


def test_kernel_inside_a_function_is_a_located_error():
    @ptxpy.jit(out_shape=lambda x: x, grid=1, block=BLOCK, interpret=True)
    def inner(x: Array[f32], out: Array[f32]):
        out[0] = x[0]

    with pytest.raises(ptxpy.CompileError) as err:
        inner(np.ones(4, np.float32))
    first, line, caret = str(err.value).splitlines()
    decorator_line = inner.fn.__code__.co_firstlineno
    assert first == (f"{__file__}:{decorator_line}:5: error: kernel "
                     "'test_kernel_inside_a_function_is_a_located_error.<locals>.inner' is defined "
                     "inside a function or class; ptxpy compiles kernels defined at the top level "
                     "of a module")
    assert line.strip().startswith("@ptxpy.jit(") and caret == "    ^"


def test_a_kernel_made_in_a_function_never_runs_the_top_level_kernel_of_its_name(tmp_path):
    """`ptxpy.jit(k)` of a function `k` defined in a function: the file's top-level `k` is
    another kernel, neither compiled for it nor taken from the disk cache of that one."""
    path = tmp_path / "shadowed.py"
    path.write_text("import ptxpy\nfrom ptxpy import Array, f32\n\n"
                    "@ptxpy.jit(out_shape=lambda x: x, grid=1, block=4, interpret=True)\n"
                    "def k(x: Array[f32], out: Array[f32]):\n"
                    "    out[ptxpy.global_id()] = x[ptxpy.global_id()] + 1.0\n\n"
                    "def make():\n"
                    "    def k(x: Array[f32], out: Array[f32]):\n"
                    "        out[ptxpy.global_id()] = x[ptxpy.global_id()] * 100.0\n"
                    "    return ptxpy.jit(k, out_shape=lambda x: x, grid=1, block=4, interpret=True)\n")
    module = load_module(path)
    x = np.ones(4, np.float32)
    assert np.asarray(module.k(x)).tolist() == [2.0] * 4      # fills the disk cache, if any
    with pytest.raises(ptxpy.CompileError, match=f"{path}:9:5: error: kernel 'make.<locals>.k' is "
                                                 "defined inside a function or class"):
        module.make()(x)


def test_kernel_without_a_source_file_says_so():
    namespace = {}
    source = SCALE_SOURCE.replace("@ptxpy.jit", "@ptxpy.jit(out_shape=lambda x: x, grid=1, block=32)")
    exec(compile(source, "<generated>", "exec"), namespace)   # decorating must not fail
    with pytest.raises(ptxpy.CompileError, match="cannot read the source of kernel 'scale' from "
                                                 "'<generated>'.*use ptxpy.transpile"):
        namespace["scale"].ptx(np.ones(4, np.float32))


def run_cell(source: str, name: str, namespace: dict) -> None:
    """Run `source` as IPython runs a notebook cell: its text kept in linecache under a name
    that is no file."""
    import linecache

    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    exec(compile(source, name, "exec"), namespace)


def test_kernel_in_a_notebook_cell_sees_names_of_earlier_cells():
    namespace = {}
    run_cell("import math\nimport numpy as np\nimport ptxpy as px\nfrom ptxpy import Array, "
             "f32 as F\nSCALE = 2.5\nN = 32\nlabel = 'not a kernel constant'\nTILE = (1, 32)\n"
             "NAMES = ('a', 1)\n",
             "<ipython-input-1-cafe>", namespace)
    run_cell('''
@px.func
def twice(v: F) -> F:
    return v * SCALE

@px.jit(out_shape=lambda x: x, grid=1, block=32, interpret=True)
def cell_kernel(x: Array[F], out: Array[F]):
    i = px.global_id(0)
    if i < len(x):
        out[i] = twice(math.sqrt(x[i])) + N * TILE[0]
''', "<ipython-input-2-beef>", namespace)
    x = np.array([4.0, 9.0, 16.0], np.float32)
    np.testing.assert_array_equal(np.asarray(namespace["cell_kernel"](x)), np.sqrt(x) * 2.5 + 32)
    filename, text = namespace["cell_kernel"].source
    assert filename == "<ipython-input-2-beef>" and text.startswith("\n@px.func\n")
    assert "import ptxpy as px\nfrom ptxpy import Array\nfrom ptxpy import f32 as F\n" in text
    assert "SCALE = 2.5\nN = 32\n" in text and "label" not in text and "numpy" not in text
    assert "TILE = (1, 32)\n" in text and "NAMES" not in text


def test_a_cell_error_keeps_the_cells_own_line_numbers():
    namespace = {}
    run_cell("import ptxpy\nfrom ptxpy import Array, f32\n", "<ipython-input-3-f00d>", namespace)
    run_cell('''@ptxpy.jit(out_shape=lambda x: x, grid=1, block=32, interpret=True)
def broken(x: Array[f32], out: Array[f32]):
    out[0] = x[0] + undefined_name
''', "<ipython-input-4-f00d>", namespace)
    with pytest.raises(ptxpy.CompileError) as err:
        namespace["broken"](np.ones(2, np.float32))
    assert str(err.value).startswith("<ipython-input-4-f00d>:3:21: error: ")


def test_const_arguments_are_numbers_of_their_kind():
    x, _ = data(8)
    with pytest.raises(TypeError, match=r"two_outputs: Const parameter 'n' is Const\[int\] but "
                                        r"was given 2.5"):
        two_outputs(x, n=2.5)
    with pytest.raises(TypeError, match="is Const\\[int\\] but was given True"):
        two_outputs(x, n=True)
    out, idx = two_outputs(x, n=np.array(3))          # a concrete 0-d array holds one
    np.testing.assert_array_equal(np.asarray(idx), np.arange(8) * 3)


def test_interpret_mode_makes_the_checks_of_a_gpu_launch():
    x, y = data()
    wrong_out = ptxpy.jit(saxpy.fn, out_shape=lambda x, y, a: jax.ShapeDtypeStruct(x.shape, jnp.int32),
                          grid=2, block=BLOCK, interpret=True)
    with pytest.raises(TypeError, match=r"kernel 'saxpy', parameter 'out': expected output "
                                        r"\(out_shape's entry\) of dtype f32 \(float32\), got int32"):
        wrong_out(x, y, 1.0)
    too_wide = ptxpy.jit(saxpy.fn, out_shape=lambda x, y, a: x, grid=1, block=2048, interpret=True)
    with pytest.raises(ValueError, match=r"block \(2048, 1, 1\) has 2048 threads; CUDA devices "
                                         "allow at most 1024 per block"):
        too_wide(x, y, 1.0)
    float_grid = ptxpy.jit(saxpy.fn, out_shape=lambda x, y, a: x, grid=lambda x, y, a: len(x) / 64,
                           block=BLOCK, interpret=True)
    with pytest.raises(TypeError, match="grid must be a non-negative int or a tuple of 1 to 3 "
                                        "non-negative ints, got 1.5625"):
        float_grid(x, y, 1.0)


# --- scalar arguments: converted to the parameter's type, one rule for the GPU and simulator ---

@ptxpy.jit(out_shape=jax.ShapeDtypeStruct((6,), jnp.float32), grid=1, block=1, interpret=True)
def echo(h: f16, b: bf16, c: i8, u: u16, w: u64, flag: bool, out: Array[f32]):
    out[0] = f32(h)
    out[1] = f32(b)
    out[2] = f32(c)
    out[3] = f32(u)
    out[4] = f32(w)
    out[5] = f32(flag)


ECHOED = ["h", "b", "c", "u", "w", "flag"]
ECHO_DEFAULTS = dict(h=1.0, b=1.0, c=1, u=1, w=1, flag=True)


def echo_call(how: str, name: str, value):
    """echo with `value` for parameter `name`: eagerly, under jax.jit as a constant (passed by
    value), or under jax.jit as a traced argument (passed by reference)."""
    if how == "eager":
        return echo(**{**ECHO_DEFAULTS, name: value})
    if how == "jit constant":
        return jax.jit(lambda: echo(**{**ECHO_DEFAULTS, name: value}))()
    return jax.jit(lambda v: echo(**{**ECHO_DEFAULTS, name: v}))(value)


SCALAR_CASES = [
    ("h", 0.5, 0.5), ("h", 2, 2.0), ("h", np.float16(0.5), 0.5), ("h", jnp.bfloat16(0.5), 0.5),
    ("h", jnp.array(0.5, jnp.bfloat16), 0.5), ("h", ml_dtypes.float8_e4m3fn(0.5), 0.5),
    ("b", 0.5, 0.5), ("b", 3, 3.0), ("b", np.float16(0.5), 0.5), ("b", jnp.bfloat16(-2.5), -2.5),
    ("c", 3.0, 3), ("c", -128, -128), ("c", jnp.bfloat16(3), 3), ("u", 3.0, 3),
    ("u", np.float32(65535), 65535), ("w", 2.0**40, 2**40), ("w", np.uint64(7), 7),
    ("w", 7.0, 7), ("flag", 1.0, 1), ("flag", False, 0), ("flag", np.bool_(True), 1),
]


# Without jax_enable_x64 a traced u64 is held in 32 bits (docs/jax.md): 2**40 cannot be traced.
@pytest.mark.parametrize("how, name, value, expected", [
    (how, *case) for how in ["eager", "jit constant", "jit traced"] for case in SCALAR_CASES
    if not (how == "jit traced" and case[2] >= 2**32)])
def test_scalar_arguments_are_converted_to_their_parameters_type(how, name, value, expected):
    want = np.array([float(ECHO_DEFAULTS[n]) for n in ECHOED], np.float32)
    want[ECHOED.index(name)] = expected
    np.testing.assert_array_equal(np.asarray(echo_call(how, name, value)), want)


@pytest.mark.parametrize("how", ["eager", "jit constant"])
@pytest.mark.parametrize("name, value, error, message", [
    ("c", 3.5, TypeError, r"expected an integer \(i8\), got 3.5"),
    ("u", 3.5, TypeError, r"expected an integer \(u16\), got 3.5"),
    ("w", float("nan"), TypeError, r"expected an integer \(u64\), got nan"),
    ("flag", 0.5, TypeError, r"expected an integer \(bool\), got 0.5"),
    ("c", 128, ValueError, "128 does not fit in i8"),
    ("u", -1.0, ValueError, r"-1.0 does not fit in u16"),
    ("w", -1, ValueError, "-1 does not fit in u64"),
    ("flag", 2.0, ValueError, "2.0 does not fit in bool"),
    ("flag", 2, ValueError, "2 does not fit in bool"),
])
def test_integer_and_bool_scalars_take_integral_values_in_range(how, name, value, error, message):
    with pytest.raises(error, match=rf"kernel 'echo', parameter '{name}': {message}"):
        echo_call(how, name, value)


# --- errors under jax.jit in interpret mode -----------------------------------------------------

@ptxpy.jit(out_shape=lambda x: x, grid=1, block=4, debug=True, interpret=True)
def at_most_one(x: Array[f32], out: Array[f32]):
    i = ptxpy.thread_idx.x
    assert x[i] <= 1.0, "too big"
    out[i] = x[i]


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=8, interpret=True)
def unguarded(x: Array[f32], out: Array[f32]):
    i = ptxpy.thread_idx.x
    out[i] = x[i]


@pytest.mark.parametrize("kernel, x, says", [
    (at_most_one, np.full(4, 2.0, np.float32), r"test_api.py:\d+: assertion failed: too big"),
    (unguarded, np.ones(4, np.float32), r"test_api.py:\d+: out-of-bounds global load"),
])
def test_simulator_errors_under_jit_carry_the_message_and_no_frames(kernel, x, says, caplog,
                                                                    monkeypatch):
    monkeypatch.delenv("PTXPY_TRACEBACK", raising=False)
    with pytest.raises(SimulatorError, match=says):
        kernel(x)                                          # eagerly: the simulator's error
    with caplog.at_level(logging.ERROR), pytest.raises(jax.errors.JaxRuntimeError) as info:
        jax.block_until_ready(jax.jit(kernel)(x))     # on a GPU the callback runs later
    message = str(info.value)
    assert re.search(f"SimulatorError: .*{says}", message), message
    assert message.count('File "') <= 1, message
    assert not [r for r in caplog.records if "pure_callback" in r.getMessage()]


# --- arguments that do not fit the kernel ------------------------------------------------------

@ptxpy.jit(out_shape=lambda x, K: x, grid=1, block=BLOCK, interpret=True)
def times_k(x: Array[f32], out: Array[f32], K: Const[int]):
    i = ptxpy.global_id(0)
    if i < len(x):
        out[i] = x[i] * K


@ptxpy.jit
def bare(x: Array[f32], out: Array[f32]):
    out[0] = x[0]


def test_a_kernel_without_out_shape_grid_or_block_names_itself_and_the_option():
    x = np.ones(4, np.float32)
    for call in (lambda: bare(x), lambda: bare.ptx(x)):
        with pytest.raises(TypeError, match=r"^bare: @ptxpy\.jit needs out_shape= to run or "
                                            r"specialise a kernel: @ptxpy\.jit\(out_shape=\.\.\.\)$"):
            call()
    no_grid = ptxpy.jit(bare.fn, out_shape=lambda x: x, interpret=True)
    with pytest.raises(TypeError, match=r"^bare: @ptxpy\.jit needs grid= to run"):
        no_grid(x)


@ptxpy.jit(out_shape=lambda x, n: x, grid=1, block=lambda x, n: n, interpret=True)
def block_of_n(x: Array[f32], n: i32, out: Array[f32]):
    out[0] = x[0]


def test_a_launch_sized_by_a_traced_value_says_how_to_make_it_static():
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError, match=r"^block_of_n: block must be a positive int .*; under "
                                        r"jax\.jit a traced value cannot size the launch: make it a "
                                        r"Const parameter, or a static argument of jax\.jit"):
        jax.jit(block_of_n)(x, 4)
    assert np.asarray(jax.jit(block_of_n, static_argnames="n")(x, 4))[0] == 1.0


def test_a_numba_style_signature_is_refused_where_the_decorator_is_applied():
    with pytest.raises(TypeError, match=r"^@ptxpy\.jit takes no signature \(got 'void\(float32\[:\]\)'\): "
                                        r"ptxpy reads the types from the function's annotations"):
        ptxpy.jit("void(float32[:])")


def test_a_numba_style_launch_says_how_ptxpy_launches():
    x, y = data(8)
    with pytest.raises(TypeError, match=r"^saxpy: a ptxpy kernel is not launched as "
                                        r"saxpy\[grid, block\]\(\.\.\.\); give grid= and block= to "
                                        r"@ptxpy\.jit .* and call saxpy\(inputs\.\.\.\), which "
                                        r"returns the outputs$"):
        saxpy[1, BLOCK](x, y, 2.0)


def test_wrong_argument_count_is_the_kernels_own_type_error():
    x, y = data(8)
    with pytest.raises(TypeError, match=r"^saxpy\(\) takes 3 arguments \(x, y, a\) but 4 were "
                                        "given; out is the output, which the call returns$"):
        saxpy(x, y, 1.0, x)
    with pytest.raises(TypeError, match=r"^two_outputs\(\) takes from 1 to 2 arguments \(x, n\) "
                                        "but 3 were given; out, idx are the outputs"):
        two_outputs(x, 2, 3)
    with pytest.raises(TypeError, match=r"^saxpy\(\) got an unexpected keyword argument 'b'$"):
        saxpy(x, y, b=1.0)
    fixed = ptxpy.jit(saxpy.fn, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32), grid=1,
                      block=BLOCK, interpret=True)
    with pytest.raises(TypeError, match=r"^saxpy\(\) takes 3 arguments \(x, y, a\) but 5 were"):
        fixed(x, y, 1.0, x, y)


@pytest.mark.parametrize("out_shape", [lambda x, K: x, jax.ShapeDtypeStruct((8,), jnp.float32)])
def test_a_const_without_default_left_out_is_a_missing_argument(out_shape):
    x, _ = data(8)
    kernel = ptxpy.jit(times_k.fn, out_shape=out_shape, grid=1, block=BLOCK, interpret=True)
    with pytest.raises(TypeError, match=r"^times_k\(\) missing argument 'K'$"):
        kernel(x)
    np.testing.assert_array_equal(np.asarray(kernel(x, K=3)), x * 3)


@pytest.mark.parametrize("what", ["grid", "block"])
def test_failing_grid_or_block_function_is_a_type_error_naming_the_kernel(what):
    launch = {"grid": 1, "block": BLOCK, what: lambda x, y, a: len(x) // 0}
    kernel = ptxpy.jit(saxpy.fn, out_shape=lambda x, y, a: x, interpret=True, **launch)
    x, y = data(8)
    with pytest.raises(TypeError, match=f"^saxpy: {what} could not be computed for this call: "
                                        "ZeroDivisionError: integer division or modulo by zero$") as info:
        kernel(x, y, 1.0)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


@pytest.mark.parametrize("arch, error, message", [
    ("sm_75", ValueError, "unsupported arch 'sm_75'"), ("bogus", ValueError, "unsupported arch 'bogus'"),
    (90, TypeError, "arch must be a str such as 'sm_90', not int"),
])
def test_arch_is_checked_when_the_decorator_is_applied(arch, error, message):
    with pytest.raises(error, match=re.escape(message)) as info:
        ptxpy.jit(arch=arch)(saxpy.fn)
    if error is ValueError:
        assert f"(supported: {', '.join(driver.SUPPORTED_ARCHS)})" in str(info.value)
    assert ptxpy.jit(arch="sm_80")(saxpy.fn).arch == "sm_80"


# --- arrays of 2**31 elements or more; 64-bit scalars held in 32 bits ----------------------------

@ptxpy.jit(out_shape=jax.ShapeDtypeStruct((2,), jnp.int32), grid=1, block=1)
def pick(a: Array[u8, 2], i: i32, j: i32, out: Array[i32]):
    out[0] = i32(a[i, j])
    out[1] = i32(a[i - 1, j - 1])


def test_an_array_of_2_31_elements_or_more_is_indexed_in_64_bits():
    """Each extent is below 2**31, their product need not be: a[65535, 32768] of a
    65536 x 32769 array is element 2,147,516,415, past an i32. The decorator compiles such an
    array's element offsets in 64 bits (and others, as before, in 32)."""
    big = pick.ptx(jax.ShapeDtypeStruct((65536, 32769), jnp.uint8), 65535, 32768)
    small = pick.ptx(jax.ShapeDtypeStruct((256, 32769), jnp.uint8), 255, 32768)
    wide_row = re.compile(r"mad\.wide\.s32 %rd\d+, %r\d+, %r\d+")    # row * extent, exact in 64 bits
    assert wide_row.search(big) and "mad.lo.s32" not in big
    assert "mad.lo.s32" in small and not wide_row.search(small)
    # the 64-bit form on an array the simulator can hold finds the same elements
    program = driver.parse(open(__file__).read(), __file__)
    wide = driver.compile_kernel(program, "pick", {}, frozenset(), driver.Options(large_arrays=("a",))).kernel
    assert wide_row.search(wide.ptx)
    from ptxpy.runtime.simulator import run_kernel

    a = np.arange(12 * 7, dtype=np.uint8).reshape(12, 7)
    out = np.zeros(2, np.int32)
    run_kernel(wide.ptx, "pick", grid=1, block=1, args=[a, 12, 7, np.int32(11), np.int32(6), out, 2])
    assert out.tolist() == [a[11, 6], a[10, 5]]


@pytest.mark.gpu
@pytest.mark.skipif(not any(d.platform == "gpu" for d in jax.devices()), reason="no CUDA GPU")
def test_an_array_of_2_31_elements_or_more_on_the_gpu():
    a = jnp.zeros((65536, 32769), jnp.uint8).at[65535, 32768].set(7).at[65534, 32767].set(9)
    assert np.asarray(pick(a, 65535, 32768)).tolist() == [7, 9]
    assert np.asarray(jax.jit(pick)(a, 65535, 32768)).tolist() == [7, 9]


@ptxpy.jit(out_shape=lambda a, x, y: [x, x], grid=lambda a, x, y: ptxpy.cdiv(x.shape[0], 128),
           block=128)
def scaled_and_sum(a: f32, x: Array[f32], y: Array[f32], scaled: Array[f32], total: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        scaled[i] = a * x[i]
        total[i] = x[i] + y[i]


@pytest.mark.gpu
@pytest.mark.skipif(not any(d.platform == "gpu" for d in jax.devices()), reason="no CUDA GPU")
def test_repeated_eager_calls_run_their_plans_launch_with_their_own_arrays_on_the_gpu():
    """A repeated eager call goes straight to its plan's jitted FFI call (`_CallPlan.run`): each
    call's own arrays, in order, whether passed by position or keyword."""
    rng = np.random.default_rng(7)
    arrays = [jnp.asarray(rng.standard_normal(1000).astype(np.float32)) for _ in range(3)]
    calls = [((2.0, arrays[0], arrays[1]), {}), ((2.0, arrays[1], arrays[2]), {}),
             ((2.0,), {"x": arrays[2], "y": arrays[0]}), ((2.0,), {"x": arrays[0], "y": arrays[2]}),
             ((-0.5, arrays[1], arrays[0]), {}), ((2.0, arrays[2], arrays[0]), {})]
    for args, kwargs in calls:
        a, x, y = (*args, kwargs.get("x"), kwargs.get("y")) if kwargs else args
        scaled, total = scaled_and_sum(*args, **kwargs)
        np.testing.assert_allclose(np.asarray(scaled), a * np.asarray(x), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(total), np.asarray(x) + np.asarray(y), rtol=1e-6)
    assert all(plan.run is not None for plan in scaled_and_sum._plans.values())


@ptxpy.jit(out_shape=lambda x: [x, x], grid=1, block=lambda x: x.shape[0])
def warp_totals(x: Array[f32], s: Array[f32], m: Array[f32]):
    i = ptxpy.thread_idx.x
    s[i] = ptxpy.warp_sum(x[i])
    m[i] = ptxpy.warp_max(x[i])


@pytest.mark.parametrize("threads", [48, 64])
def test_the_call_s_block_picks_the_one_warp_reduction_it_needs(threads):
    """A block of 64 threads is whole warps: the butterfly alone; one of 48 has a warp of 16
    lanes: only the reduction over the lanes present (on the GPU when there is one). (On f32:
    32-bit integers take one redux.sync either way.)"""
    x = np.random.default_rng(threads).integers(-1000, 1000, threads).astype(np.float32)
    s, m = warp_totals(x)
    warps = [x[k:k + 32] for k in range(0, threads, 32)]
    np.testing.assert_array_equal(np.asarray(s), np.concatenate([[w.sum()] * len(w) for w in warps]))
    np.testing.assert_array_equal(np.asarray(m), np.concatenate([[w.max()] * len(w) for w in warps]))
    ptx = warp_totals.ptx(x)
    assert ("shfl.sync.bfly" in ptx, "shfl.sync.down" in ptx) == (threads == 64, threads == 48)


@ptxpy.jit(out_shape=lambda x, a, n, m: x, grid=1, block=4)
def wide_scalars(x: Array[f32], a: f64, n: i64, m: u64, out: Array[f32]):
    i = ptxpy.global_id(0)
    out[i] = f32(f64(x[i]) * a + f64(n) + f64(m >> u64(1)))


@pytest.mark.parametrize("how", ["eager", "jit"])
def test_64_bit_scalars_are_taken_in_32_bits_when_jax_holds_them_so(how):
    """Without jax_enable_x64 JAX holds an f64, i64 or u64 scalar (a 0-d array, or a traced
    value) as f32, i32 or u32: the kernel is compiled to load that and widen it."""
    x = np.arange(4, dtype=np.float32)
    args = (jnp.float32(0.5), jnp.int32(-3), jnp.uint32(6))
    out = wide_scalars(x, *args) if how == "eager" else jax.jit(wide_scalars)(x, 0.5, -3, 6)
    np.testing.assert_array_equal(np.asarray(out), x * 0.5 - 3 + 3)
    ptx = wide_scalars.ptx(x, *args)
    assert "ld.global.nc.f32" in ptx and "cvt.f64.f32" in ptx and "cvt.s64.s32" in ptx
    assert "cvt.u64.u32" in ptx


def test_a_64_bit_array_needs_jax_enable_x64():
    """JAX without jax_enable_x64 would make an int64 array int32, and the kernel would read
    past its end: refused before anything runs."""
    x = np.arange(4, dtype=np.float64)
    with pytest.raises(TypeError, match=r"kernel 'negate64', parameter 'x': an array of f64 needs "
                                        r"jax.config.update\('jax_enable_x64', True\)"):
        negate64(x)
    # under jax.jit JAX has made it float32 before the kernel sees it: the dtype error says why
    with pytest.raises(TypeError, match=r"^negate64: argument 'x' must have dtype f64, got float32 "
                                        r"\(if it was float64: JAX's 64-bit mode is off, and JAX "
                                        r"holds float64 values as float32; jax.config.update"):
        jax.jit(negate64)(x)
    with jax.enable_x64(True):
        np.testing.assert_array_equal(np.asarray(negate64(x)), -x)


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=4)
def negate64(x: Array[f64], out: Array[f64]):
    i = ptxpy.global_id(0)
    out[i] = -x[i]


# --- the call's signature, for jax.jit's static arguments --------------------------------------

@ptxpy.jit(out_shape=lambda x, K=4: x, grid=1, block=BLOCK, interpret=True)
def scale_after_output(x: Array[f32], out: Array[f32], K: Const[int] = 4):
    i = ptxpy.thread_idx.x
    if i < len(x):
        out[i] = x[i] * K


@ptxpy.jit(out_shape=lambda x, K, y, S=1: x, grid=1, block=BLOCK, interpret=True)
def const_in_the_middle(x: Array[f32], K: Const[int], y: Array[f32], out: Array[f32],
                        S: Const[int] = 1):
    i = ptxpy.thread_idx.x
    if i < len(x):
        out[i] = x[i] * K + y[i] * S


def test_the_kernels_signature_is_its_calls():
    """The outputs are not arguments: inspect.signature (which JAX reads) shows the inputs in
    call order, with the Const defaults."""
    def described(kernel):
        return [(p.name, p.default) for p in inspect.signature(kernel).parameters.values()]

    empty = inspect.Parameter.empty
    assert described(scale_after_output) == [("x", empty), ("K", 4)]
    assert described(const_in_the_middle) == [("x", empty), ("K", empty), ("y", empty), ("S", 1)]
    assert described(two_outputs) == [("x", empty), ("n", 2)]
    assert list(inspect.signature(saxpy).parameters) == ["x", "y", "a"]


@pytest.mark.parametrize("static", [{"static_argnames": "K"}, {"static_argnums": 1}])
@pytest.mark.parametrize("by_keyword", [False, True])
def test_jax_jit_static_argument_after_the_outputs(static, by_keyword):
    x = np.arange(8, dtype=np.float32)
    f = jax.jit(scale_after_output, **static)
    out = f(x, K=3) if by_keyword else f(x, 3)
    np.testing.assert_array_equal(np.asarray(out), x * 3)


@pytest.mark.parametrize("static", [{"static_argnames": ("K", "S")}, {"static_argnums": (1, 3)}])
@pytest.mark.parametrize("by_keyword", [False, True])
def test_jax_jit_static_arguments_in_the_middle_and_after_the_outputs(static, by_keyword):
    x, y = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    f = jax.jit(const_in_the_middle, **static)
    out = f(x, y=y, K=2, S=5) if by_keyword else f(x, 2, y, 5)
    np.testing.assert_array_equal(np.asarray(out), x * 2 + 5)


# --- arguments are checked before grid, block and out_shape use them ---------------------------

@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: x.shape[1], block=32, interpret=True)
def rows(x: Array[f32, 2], out: Array[f32, 2]):
    out[ptxpy.block_idx.x, ptxpy.thread_idx.x] = x[ptxpy.block_idx.x, ptxpy.thread_idx.x]


@ptxpy.jit(out_shape=lambda x: jax.ShapeDtypeStruct((x.shape[1], x.shape[0]), x.dtype), grid=1,
           block=32, interpret=True)
def transposed(x: Array[f32, 2], out: Array[f32, 2]):
    out[ptxpy.thread_idx.x, 0] = x[0, ptxpy.thread_idx.x]


@pytest.mark.parametrize("call, error, message", [
    (lambda: rows(np.zeros(8, np.float32)), ValueError,
     r"rows: argument 'x' must have rank 2, got shape \(8,\)"),
    (lambda: rows(np.zeros((2, 8), np.int32)), TypeError,
     "rows: argument 'x' must have dtype f32, got int32"),
    (lambda: rows(3.0), TypeError, "rows: argument 'x' must be an array, got float"),
    (lambda: transposed(np.zeros(8, np.float32)), ValueError,
     r"transposed: argument 'x' must have rank 2, got shape \(8,\)"),
    (lambda: saxpy(jnp.float32(1), np.zeros(8, np.float32), 2.0), ValueError,
     r"saxpy: argument 'x' must have rank 1, got shape \(\)"),
])
def test_arguments_are_checked_before_the_launch_functions_use_them(call, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        call()


# --- out_shape values ----------------------------------------------------------------------------

@ptxpy.jit(out_shape=lambda x: jax.ShapeDtypeStruct((x.shape[0] - 9,), x.dtype), grid=1, block=8,
           interpret=True)
def shorter(x: Array[f32], out: Array[f32]):
    pass


@pytest.mark.parametrize("wrap", [lambda f: f, jax.jit])
def test_a_negative_output_extent_is_refused_before_launch(wrap):
    with pytest.raises(ValueError, match=r"^shorter: output 'out' has shape \(-1,\); an extent "
                                         "cannot be negative"):
        wrap(shorter)(np.zeros(8, np.float32))


@pytest.mark.parametrize("out_shape, says", [
    ([], "out_shape has no entries; a kernel returns at least one output"),
    (lambda x: [], "out_shape has no entries"),
    ((100,), r"out_shape must be a jax.ShapeDtypeStruct, an array, a list of them, or a function "
             r"returning one of these; got \(100,\) \(tuple\), whose entry 0 is 100 \(int\)"),
    (5, r"out_shape must be .*; got 5 \(int\)$"),
    (lambda x: x.shape, r"out_shape must be .*; its function returned \(8,\) \(tuple\), whose "
                        r"entry 0 is 8 \(int\)$"),
])
def test_an_out_shape_that_is_no_shape_says_what_it_must_be(out_shape, says):
    kernel = ptxpy.jit(unguarded.fn, out_shape=out_shape, grid=1, block=8, interpret=True)
    with pytest.raises(TypeError, match=f"^unguarded: {says}"):
        kernel(np.ones(8, np.float32))


@ptxpy.jit(out_shape=lambda n: jax.ShapeDtypeStruct((n,), jnp.int32), grid=1, block=32,
           interpret=True)
def iota(n: i32, out: Array[i32]):
    i = ptxpy.thread_idx.x
    if i < n:
        out[i] = i


def test_an_out_shape_sized_by_a_traced_scalar_is_a_worded_error():
    kernel = iota
    assert list(np.asarray(kernel(5))) == [0, 1, 2, 3, 4]      # eager: a concrete size
    with pytest.raises(TypeError, match=r"^iota: out_shape must give each output a shape of ints; "
                                        r"its function returned the shape \(.*Tracer.*\); under "
                                        r"jax.jit a traced value cannot size an output: make the "
                                        r"size a Const parameter, or a static argument of jax.jit"):
        jax.jit(kernel)(5)


@ptxpy.jit(out_shape=lambda x: [x, jax.ShapeDtypeStruct((1,), jnp.int32)], grid=1, block=(4, 4),
           interpret=True)
def lower(x: Array[f32, 2], out: Array[f32, 2], count: Array[i32]):
    r = ptxpy.thread_idx.y
    c = ptxpy.thread_idx.x
    if c <= r:
        out[r, c] = x[r, c]
    if r == 0 and c == 0:
        count[0] += 1


def test_unwritten_output_elements_read_as_nan_in_the_simulator():
    """On the GPU an output no input aliases starts as whatever its buffer held; the simulator
    fills it with all-ones bytes, so elements a kernel leaves unwritten show (NaN, -1)."""
    kernel = lower
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    out, count = kernel(x)
    expected = np.where(np.tril(np.ones((4, 4), bool)), x, np.nan)
    np.testing.assert_array_equal(np.asarray(out), expected)
    assert list(np.asarray(count)) == [0]       # -1 + 1: a count never zeroed


# --- scalars beyond 64 bits ----------------------------------------------------------------------

@ptxpy.jit(out_shape=jax.ShapeDtypeStruct((2,), jnp.float32), grid=1, block=1, interpret=True)
def floats(a: f32, h: f16, out: Array[f32]):
    out[0] = a
    out[1] = f32(h)


@pytest.mark.parametrize("a, expected", [
    (2**64, 2.0**64), (-(2**100), -(2.0**100)), (2**128, np.inf), (10**400, np.inf),
    (-(10**400), -np.inf), (1e300, np.inf),
], ids=lambda v: str(v)[:12])
def test_a_python_int_of_any_size_is_cast_to_a_float_parameter(a, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # overflow to inf is the documented result
        out = np.asarray(floats(a, 1e6))
    assert out[0] == np.float32(expected) and out[1] == np.inf


# --- derivatives ---------------------------------------------------------------------------------

@pytest.mark.parametrize("transform", [
    lambda f: jax.grad(lambda x: f(x).sum()),
    lambda f: jax.jit(jax.grad(lambda x: f(x).sum())),
    lambda f: lambda x: jax.jvp(f, (x,), (x,)),
    lambda f: lambda x: jax.vjp(f, x),
])
def test_differentiating_a_kernel_names_it_and_points_at_custom_vjp(transform):
    x = np.ones(8, np.float32)
    with pytest.raises(TypeError, match=r"^ptxpy kernel 'unguarded' has no derivative rule, so "
                                        r"jax.grad .*jax.custom_vjp \(examples/jax_model_step.py"):
        transform(unguarded)(x)


def test_arguments_that_are_not_differentiated_need_no_derivative_rule():
    x = np.arange(8, dtype=np.float32)
    grad = jax.grad(lambda w: (w * unguarded(x)).sum())(jnp.float32(2.0))
    assert grad == x.sum()


# --- decorator arguments, array arguments, grid values -------------------------------------------

@pytest.mark.parametrize("option, value, says", [
    ("input_output_aliases", 5, r"input_output_aliases must be a dict \{input index: output "
                                 r"index\} of ints, got 5 \(int\)"),
    ("input_output_aliases", {0: "0"},
     r"input_output_aliases must be a dict .*, got \{0: '0'\} \(dict\)"),
    ("interpret", "no", r"interpret must be True, False or None, got 'no' \(str\)"),
    ("fast_math", "yes", r"fast_math must be True or False, got 'yes' \(str\)"),
    ("debug", 1, r"debug must be True or False, got 1 \(int\)"),
    ("debug", None, r"debug must be True or False, got None \(NoneType\)"),
])
def test_decorator_arguments_are_checked_when_it_is_applied(option, value, says):
    with pytest.raises(TypeError, match=f"^@ptxpy.jit of unguarded: {says}$"):
        ptxpy.jit(out_shape=lambda x: x, grid=1, block=8, **{option: value})(unguarded.fn)


def test_aliases_may_be_numpy_integers():
    kernel = ptxpy.jit(add_one_in_place.fn, out_shape=lambda x: x, grid=1, block=BLOCK,
                       input_output_aliases={np.int64(0): np.int32(0)}, interpret=True)
    assert kernel.input_output_aliases == {0: 0}
    assert all(type(i) is int for pair in kernel.input_output_aliases.items() for i in pair)
    x = np.zeros(4, np.float32)
    np.testing.assert_array_equal(np.asarray(kernel(x)), [1, 0, 1, 0])


def test_a_shape_struct_is_no_array_for_a_call_but_is_for_transpile():
    spec = jax.ShapeDtypeStruct((8,), jnp.float32)
    with pytest.raises(TypeError, match=r"^unguarded: argument 'x' must be an array, got "
                                        r"ShapeDtypeStruct \(for shapes, unguarded.transpile"):
        unguarded(spec)
    assert ".visible .entry unguarded(" in unguarded.transpile(spec)


def test_a_big_endian_array_is_refused_as_jax_refuses_it():
    """JAX takes no big-endian array (jnp.asarray and jax.jit refuse one): the kernel says so,
    eagerly as under jax.jit."""
    x = np.arange(8, dtype=">f4")
    with pytest.raises(TypeError, match=r"^unguarded: argument 'x' has dtype '>f4', in "
                                        "big-endian byte order, which JAX does not take"):
        unguarded(x)
    native = x.astype(x.dtype.newbyteorder("="))
    np.testing.assert_array_equal(np.asarray(unguarded(native)), x)


@pytest.mark.parametrize("value, forced", [("1", True), ("yes", True), ("0", False),
                                           ("", False), ("false", False), ("OFF", False),
                                           ("No", False), (" off ", False)])
def test_ptxpy_interpret_false_off_no_do_not_force_the_simulator(monkeypatch, value, forced):
    monkeypatch.setenv("PTXPY_INTERPRET", value)
    assert saxpy2._interpreting() is forced


def test_ptxpy_interpret_is_read_at_every_call(monkeypatch):
    monkeypatch.setenv("PTXPY_INTERPRET", "1")
    assert saxpy2._interpreting() is True
    monkeypatch.delenv("PTXPY_INTERPRET")
    assert saxpy2._interpreting() is False
    os.environ["PTXPY_INTERPRET"] = "on"
    try:
        assert saxpy2._interpreting() is True
    finally:
        del os.environ["PTXPY_INTERPRET"]
    assert saxpy2._interpreting() is False


def test_call_plans_key_arrays_by_shape_dtype_and_weak_type():
    x = jnp.ones(3, jnp.float32)
    key = ptxpy.api._argument_key(x)
    assert key == (type(x), (3,), np.dtype(np.float32), False)
    assert ptxpy.api._argument_key(jnp.ones(3, jnp.float32)) == key
    assert ptxpy.api._argument_key(jnp.ones(4, jnp.float32)) != key
    assert ptxpy.api._argument_key(jnp.ones(3, jnp.int32)) != key
    assert ptxpy.api._argument_key(jnp.asarray(1.0)) != ptxpy.api._argument_key(jnp.float32(1.0))
    assert ptxpy.api._argument_key(np.ones(3, np.float32))[0] is np.ndarray


@pytest.mark.parametrize("grid", [lambda x: ptxpy.cdiv(jnp.int32(len(x)), 8), np.int64(1),
                                  np.array(1), (jnp.int32(1), np.uint8(1))])
def test_a_grid_may_hold_concrete_0d_integer_arrays(grid):
    kernel = ptxpy.jit(unguarded.fn, out_shape=lambda x: x, grid=grid, block=8, interpret=True)
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(kernel(x)), x)


@pytest.mark.parametrize("launch, error, says", [
    ({"grid": (1, 1, 1, 1)}, TypeError, r"grid must be a non-negative int or a tuple of 1 to 3 "
                                        r"non-negative ints, got \(1, 1, 1, 1\)"),
    ({"grid": True}, TypeError, "grid must be .*, got True"),
    ({"grid": jnp.float32(1)}, TypeError, "grid must be"),
    ({"block": -8}, ValueError, "block must be a positive int or a tuple of 1 to 3 positive ints, "
                                "got -8"),
])
def test_bad_grid_and_block_values_name_the_kernel(launch, error, says):
    kernel = ptxpy.jit(unguarded.fn, out_shape=lambda x: x, **{"grid": 1, "block": 8, **launch},
                       interpret=True)
    with pytest.raises(error, match=f"^unguarded: {says}"):
        kernel(np.ones(8, np.float32))


TAPS = (0.25, 0.5, 0.25)


@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: (ptxpy.cdiv(x.shape[0], 128),), block=128)
def smooth(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    n = x.shape[0]
    if i < n:
        acc = 0.0
        for k in range(3):
            j = min(max(i + k - 1, 0), n - 1)
            acc += TAPS[k] * x[j]
        out[i] = acc


def _smooth(x):
    padded = np.concatenate([x[:1], x, x[-1:]])
    out = np.zeros_like(x)
    for k in range(3):
        out = (out + np.float32(TAPS[k]) * padded[k:k + x.size]).astype(np.float32)
    return out


def test_a_constant_table_through_jax_eager_and_in_a_jitted_chain():
    """The `.const` table is initialized wherever the module is loaded: eagerly, and in a chain
    of six launches under jax.jit (XLA records them into a CUDA graph on a GPU)."""
    x = np.random.default_rng(7).standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(smooth(x)), _smooth(x))

    @jax.jit
    def six(v):
        for _ in range(6):
            v = smooth(v) * 2.0
        return v

    expected = x
    for _ in range(6):
        expected = (_smooth(expected) * np.float32(2)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(six(x)), expected)
    assert ".const .align 4 .f32 const_TAPS[3]" in smooth.ptx(x)


@pytest.mark.parametrize("target, what", [
    (lambda x: x, "a lambda"),
    (type("K", (), {}), "the class K"),
    (len, "the built-in 'len'"),
    (3, "an object of type int"),
])
def test_decorating_what_is_not_a_def_is_refused_at_once(target, what):
    for decorator, apply in (("@ptxpy.jit", ptxpy.jit), ("@ptxpy.jit", ptxpy.jit(grid=1, block=1)),
                             ("@ptxpy.func", ptxpy.func)):
        with pytest.raises(TypeError) as info:
            apply(target)
        assert str(info.value) == (f"{decorator} needs a function defined with def (ptxpy "
                                   f"compiles its source), got {what}")


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=4, interpret=True)
def scaled_by_const(x: Array[f32], out: Array[f32], K: Const[int] = 2):
    i = ptxpy.global_id(0)
    out[i] = x[i] * K


def test_an_out_shape_function_may_leave_out_const_parameters():
    """As Triton's grid functions leave out `meta`: the function gets the inputs it names, by
    name; the call's signature is still every input."""
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(scaled_by_const(x)), x * 2)
    np.testing.assert_array_equal(np.asarray(scaled_by_const(x, 3)), x * 3)
    np.testing.assert_array_equal(np.asarray(scaled_by_const(x, K=5)), x * 5)
    np.testing.assert_array_equal(np.asarray(jax.jit(scaled_by_const, static_argnames="K")(x, K=3)),
                                  x * 3)
    assert str(inspect.signature(scaled_by_const)) == "(x: Array[f32], K: Const[int] = 2)"


@ptxpy.jit(out_shape=lambda x, K: x, grid=lambda x, K: 1, block=lambda x, K: 4 * K, interpret=True)
def spread_by_const(x: Array[f32], out: Array[f32], K: Const[int] = 1):
    i = ptxpy.global_id(0)
    if i < len(x):
        out[i] = x[i] + K


def test_functions_that_name_a_const_get_its_default_when_the_call_leaves_it_out():
    x = np.arange(8, dtype=np.float32)
    got = np.asarray(spread_by_const(x, K=2))      # block 8: every element
    np.testing.assert_array_equal(got, x + 2)
    first = np.asarray(spread_by_const(x))         # block 4 (K's default 1): the first four
    np.testing.assert_array_equal(first[:4], x[:4] + 1)


@ptxpy.jit(out_shape=lambda x: np.zeros(2, np.int32), grid=1, block=1, interpret=True)
def count_above(x: Array[f32, 2], threshold: f32, out: Array[i32]):
    out[0] = i32(x[0, 0] > threshold)


def test_an_out_shape_function_that_leaves_out_a_scalar_input_is_named():
    """Not read as a kernel of two outputs (its arity would say so), whose error would call
    the input x an output."""
    with pytest.raises(TypeError) as info:
        count_above(np.ones((2, 2), np.float32), np.float32(0.5))
    assert str(info.value) == ("count_above: out_shape's function takes (x) but the call passes 2 "
                               "inputs (x, threshold); give it one parameter per input: "
                               "lambda x, threshold: ...")


_GRID_CALLS = []


def _counted_grid(x, y, a):
    _GRID_CALLS.append((x.shape, a))
    return (ptxpy.cdiv(x.shape[0], BLOCK),)


@ptxpy.jit(out_shape=lambda x, y, a: x, grid=_counted_grid, block=BLOCK, interpret=True)
def counted_axpy(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = a * x[i] + y[i]


def test_a_repeated_call_reuses_its_plan_and_binds_its_own_arguments():
    """out_shape and grid functions run once per kind of call (shapes, dtypes, scalar values,
    keywords), as under jax.jit; each call still computes with its own arguments."""
    axpy, seen = counted_axpy, _GRID_CALLS
    seen.clear()
    x, y = data()
    np.testing.assert_allclose(np.asarray(axpy(x, y, 2.0)), 2 * x + y, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(axpy(y, x, 2.0)), 2 * y + x, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(axpy(x, a=2.0, y=x)), 3 * x, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(axpy(x, y=y, a=2.0)), 2 * x + y, rtol=1e-6)
    assert seen == [((100,), 2.0), ((100,), 2.0), ((100,), 2.0)]    # positional; two keyword orders
    np.testing.assert_allclose(np.asarray(axpy(x, y, 3.0)), 3 * x + y, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(axpy(x[:50], y[:50], 3.0)), 3 * x[:50] + y[:50], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(axpy(jnp.asarray(x), jnp.asarray(y), 3.0)), 3 * x + y,
                               rtol=1e-6)
    assert seen[3:] == [((100,), 3.0), ((50,), 3.0), ((100,), 3.0)]   # the numpy arrays' and JAX's
    with pytest.raises(TypeError, match="must have dtype f32"):     # a refused call: every time
        axpy(x.astype(np.float64), y, 3.0)
    with pytest.raises(TypeError, match="must have dtype f32"):
        axpy(x.astype(np.float64), y, 3.0)


@ptxpy.jit(out_shape=lambda x, c: x, grid=1, block=8, interpret=True)
def divided_by_const(x: Array[f32], c: Const[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = x[i] / c


@pytest.mark.parametrize("make", [float, np.float32, np.float64], ids=["float", "f32", "f64"])
def test_a_const_of_minus_zero_is_not_the_const_zero(make):
    """-0.0 == 0.0 as numbers: neither a call plan nor the compiled kernels may take one for
    the other (the kernel divides by the Const)."""
    x = np.ones(8, np.float32)
    assert np.all(np.asarray(divided_by_const(x, make(0.0))) == np.inf)
    assert np.all(np.asarray(divided_by_const(x, make(-0.0))) == -np.inf)
    assert np.all(np.asarray(divided_by_const(x, c=make(-0.0))) == -np.inf)
    assert np.all(np.asarray(divided_by_const(x, make(0.0))) == np.inf)


@ptxpy.jit(out_shape=lambda x, k: x, grid=1, block=8, interpret=True)
def scaled_sum(x: Array[i32], k: Const[int], out: Array[i32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        s = x[i]
        s += x[i] * k
        out[i] = s


def test_a_compile_error_that_a_const_value_causes_names_the_value():
    x = np.arange(8, dtype=np.int32)
    np.testing.assert_array_equal(np.asarray(scaled_sum(x, 3)), x * 4)
    with pytest.raises(ptxpy.CompileError) as info:
        scaled_sum(x, 2**31)
    lines = str(info.value).splitlines()
    assert lines[0].endswith("error: cannot assign i64 to variable 's' of type i32; use i32(...) to convert")
    assert lines[-1].endswith(f":{scaled_sum.fn.__code__.co_firstlineno + 1}:5: note: kernel "
                              "'scaled_sum' compiled for Const k=2147483648")


@pytest.mark.parametrize("wrap", [np.asarray, jnp.asarray], ids=["numpy", "jax"])
def test_a_const_from_a_0d_array_is_read_at_every_call(wrap):
    """A plan keys an array by its shape and dtype; a Const's value is read at every call."""
    x = np.arange(8, dtype=np.float32)
    for c in (2.0, 4.0, 8.0, 4.0):
        got = divided_by_const(x, wrap(np.float32(c)))
        np.testing.assert_array_equal(np.asarray(got), x / np.float32(c))


def test_a_scalar_argument_keys_its_plan_by_its_exact_value():
    keys = [ptxpy.api._call_key((v,), {}) for v in
            (0.0, -0.0, float("nan"), np.float32(0.0), np.float32(-0.0), 1, True, 1.0)]
    assert len(set(keys)) == len(keys)
    assert ptxpy.api._call_key((float("nan"),), {}) == keys[2]     # one plan for every nan


@ptxpy.jit(out_shape=lambda x, y, a: x, grid=lambda x, y, a: ptxpy.cdiv(x.shape[0], BLOCK),
           block=BLOCK, interpret=False)
def gpu_axpy(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = a * x[i] + y[i]


def _as_on_a_gpu(monkeypatch, prepare) -> None:
    """Eager calls take the GPU's path, with `prepare` for the runtime's checked launch."""
    from ptxpy.runtime import launch as launch_mod

    monkeypatch.delenv("PTXPY_INTERPRET", raising=False)
    monkeypatch.setattr(ptxpy.api, "_has_gpu", lambda: True)
    monkeypatch.setattr(ptxpy.api, "_gpu_arch", lambda: "sm_90")
    monkeypatch.setattr(launch_mod, "prepare", prepare)
    monkeypatch.setattr(launch_mod, "_eager_calls", {})


def test_a_repeated_eager_gpu_call_runs_the_launch_its_plan_checked(monkeypatch):
    """The runtime's checked launch (`PreparedCall`, a stand-in here: no GPU) is kept in the call
    plan: a call of the same kind runs it with its own arguments, without `launch`'s checks."""
    from ptxpy.runtime import launch as launch_mod

    checked, ran = [], []

    class Launch:     # what an eager call uses of a PreparedCall
        def __init__(self, kernel, args):
            self.kernel, self.values, self.buffer_positions = kernel, args, [0, 1]
            self.owner = None

        def run_eagerly(self, args):
            ran.append(args)
            return [args[2] * args[0] + args[1]]

        def bind(self, values):
            return self.run_eagerly(values)

        def runner(self):    # the jitted FFI call: the buffers only (the scalar is the plan's)
            return lambda x, y: self.run_eagerly([x, y, self.values[2]])

    def prepare(kernel, args, out_types, grid, block, aliases=None):
        checked.append(args[2])
        return Launch(kernel, args)

    _as_on_a_gpu(monkeypatch, prepare)
    signatures = []
    eager_signature = launch_mod._eager_signature
    monkeypatch.setattr(launch_mod, "_eager_signature",
                        lambda *args: signatures.append(args) or eager_signature(*args))
    monkeypatch.setattr(gpu_axpy, "_plans", {})    # (its plans hold the stand-in launches)
    x, y = data()
    jx, jy = jnp.asarray(x), jnp.asarray(y)
    for first, second, a in [(jx, jy, 2.0), (jy, jx, 2.0), (jx, jy, 3.0), (jx, jy, 2.0)]:
        np.testing.assert_allclose(np.asarray(gpu_axpy(first, second, a)),
                                   a * np.asarray(first) + np.asarray(second), rtol=1e-6)
    assert checked == [2.0, 3.0]    # one check per kind of call
    assert len(signatures) == 2     # and `launch` only for the first of each kind
    assert [[id(v) for v in args[:2]] + [args[2]] for args in ran] == [
        [id(jx), id(jy), 2.0], [id(jy), id(jx), 2.0], [id(jx), id(jy), 3.0], [id(jx), id(jy), 2.0]]
    gpu_axpy(x, y, 2.0)
    gpu_axpy(x, y, 2.0)      # NumPy arrays: launch checks every call (no runtime signature)
    assert checked == [2.0, 3.0, 2.0, 2.0]


@ptxpy.jit(out_shape=lambda a, x: x, grid=lambda a, x: ptxpy.cdiv(x.shape[0], BLOCK),
           block=BLOCK, interpret=False)
def gpu_scale(a: f32, x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = a * x[i]


def test_a_repeated_eager_call_passes_its_plans_jitted_call_the_buffers_only(monkeypatch):
    """The runtime's own PreparedCall (its jitted FFI call a stand-in: no GPU): a repeated call
    hands the jitted call the arrays among its arguments (scalar first, by keyword), in order."""
    from ptxpy.runtime import executables, launch as launch_mod

    made, given = [], []

    def prepare(kernel, args, out_types, grid, block, aliases=None):
        positions = [k for k, v in enumerate(args) if isinstance(v, jax.Array)]
        return launch_mod.PreparedCall(kernel, None, list(args), positions, out_types, {})

    def eager_runner(fn, operands, key_parts, owner=None):
        made.append(len(operands))
        scale = {1: 2.0, 2: 3.0}[len(made)]     # the plan's scalar (the prepared values hold it)
        return lambda x: given.append(x) or [scale * x]

    _as_on_a_gpu(monkeypatch, prepare)
    monkeypatch.setattr(executables, "eager_runner", eager_runner)
    monkeypatch.setattr(gpu_scale, "_plans", {})
    prepared_calls = []
    prepared_call = gpu_scale._prepared_call
    monkeypatch.setattr(gpu_scale, "_prepared_call",
                        lambda *args: prepared_calls.append(args) or prepared_call(*args))
    x, y = (jnp.asarray(v) for v in data())
    calls = [((2.0, x), {}), ((2.0, y), {}), ((3.0,), {"x": x}), ((3.0,), {"x": y}),
             ((2.0, x), {})]
    for args, kwargs in calls:
        array = kwargs.get("x", args[-1])
        np.testing.assert_allclose(np.asarray(gpu_scale(*args, **kwargs)),
                                   args[0] * np.asarray(array), rtol=1e-6)
    assert made == [1, 1]     # one jitted call per kind of call: (2.0, array), (3.0, x=array)
    assert len(prepared_calls) == 2     # the repeated calls go straight to it
    assert [id(v) for v in given] == [id(x), id(y), id(x), id(y), id(x)]
    plan = next(iter(gpu_scale._plans.values()))
    assert plan.operands == [1] and plan.run is plan.launched.runner()


def test_a_call_under_jit_is_prepared_at_each_trace():
    traced = jax.jit(lambda x, y, a: saxpy(x, y, a))
    x, y = data()
    np.testing.assert_allclose(np.asarray(traced(x, y, 2.0)), 2 * x + y, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(traced(x, y, -1.0)), y - x, rtol=1e-6)
    keys = []
    jax.jit(lambda v: keys.append(ptxpy.api._call_key((v,), {})) or v)(jnp.zeros(3))
    assert keys == [None] and ptxpy.api._call_key((jnp.zeros(3),), {}) is not None


class _ShapedThing:
    """Not an array, though it has a shape and a dtype (both unhashable)."""
    shape, dtype = [4], ["f4"]


def test_an_argument_that_cannot_key_a_plan_is_checked_as_before():
    assert ptxpy.api._call_key((_ShapedThing(),), {}) is None
    with pytest.raises(TypeError, match="argument 'x' must have dtype f32"):
        counted_axpy(_ShapedThing(), np.zeros(4, np.float32), 1.0)
