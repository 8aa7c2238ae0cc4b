"""Module tuple constants indexed with a run-time value: tables in `.const` memory (CUDA's
`__constant__` arrays), checked against NumPy in the simulator (and on the GPU with
PTXPY_TEST_DEVICE=gpu), in the IR interpreter, and in the PTX and error text."""
import os
import re

import numpy as np
import pytest

from kernel_harness import Out, compile_source, run
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.transpiler import driver, interp
from ptxpy.transpiler.errors import CompileError

HEADER = """
import ptxpy
from ptxpy import Array, f16, f32, f64, i8, i32, i64, u8, u64

GAUSS5 = (0.0625, 0.25, 0.375, 0.25, 0.0625)
PRIMES = (2, 3, 5, 7, 11, 13)
THIRDS = (1 / 3, 2 / 3, 0.1)
"""

rng = np.random.default_rng(35)


def src(body: str) -> str:
    return HEADER + body


BLUR = src("""
@ptxpy.jit
def blur(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    if i >= 2 and i < x.shape[0] - 2:
        acc = 0.0
        for k in range(5):
            acc += GAUSS5[k] * x[i + k - 2]
        out[i] = acc
""")


def test_float_table_in_a_loop():
    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    (out,) = run(BLUR, "blur", [x, Out(n, np.float32, init=-7)], grid=2, block=256)
    expected = np.full(n, -7, np.float32)
    for i in range(2, n - 2):
        acc = np.float32(0)
        for k in range(5):
            acc = np.float32(acc + np.float32(GAUSS5[k]) * x[i + k - 2])
        expected[i] = acc
    np.testing.assert_array_equal(out, expected)


GAUSS5 = (0.0625, 0.25, 0.375, 0.25, 0.0625)
PRIMES = (2, 3, 5, 7, 11, 13)
THIRDS = (1 / 3, 2 / 3, 0.1)


def test_table_is_a_const_array_at_module_scope():
    ptx = compile_source(BLUR, "blur").ptx
    assert ".const .align 4 .f32 const_GAUSS5[5] = {0f3D800000, 0f3E800000, 0f3EC00000, " \
           "0f3E800000, 0f3D800000};" in ptx
    assert ptx.index(".const") < ptx.index(".entry")
    assert re.search(r"ld\.const\.f32 %f\d+, \[%rd\d+\];", ptx)


def test_int_table_indexed_by_values_read_from_memory():
    source = src("""
@ptxpy.jit
def lookup(idx: Array[u8], wide: Array[i64], out: Array[i32], out2: Array[i32]):
    i = ptxpy.global_id(0)
    if i < idx.shape[0]:
        out[i] = PRIMES[idx[i]] * 2 + 1
        out2[i] = PRIMES[wide[i]]
""")
    idx = rng.integers(0, 6, 100).astype(np.uint8)
    wide = rng.integers(0, 6, 100).astype(np.int64)
    out, out2 = run(source, "lookup", [idx, wide, Out(100, np.int32), Out(100, np.int32)],
                    grid=1, block=128)
    primes = np.array(PRIMES, np.int32)
    np.testing.assert_array_equal(out, primes[idx] * 2 + 1)
    np.testing.assert_array_equal(out2, primes[wide])


def test_cast_converts_the_table_not_the_loaded_value():
    """f64(THIRDS[k]) reads the doubles Python holds (not f32 values widened); f16(...) rounds
    each number once; i8(...) wraps each; a plain read is f32."""
    source = src("""
WRAPS = (300, -1, 127)

@ptxpy.jit
def casts(idx: Array[i32], d: Array[f64], h: Array[f16], s: Array[f32], b: Array[i32]):
    i = ptxpy.global_id(0)
    if i < idx.shape[0]:
        k = idx[i]
        d[i] = f64(THIRDS[k])
        h[i] = f16(THIRDS[k])
        s[i] = THIRDS[k] * 1.0
        b[i] = i8(WRAPS[k])
""")
    idx = np.array([0, 1, 2, 2, 0, 1], np.int32)
    n = idx.size
    d, h, s, b = run(source, "casts", [idx, Out(n, np.float64), Out(n, np.float16),
                                       Out(n, np.float32), Out(n, np.int32)], grid=1, block=32)
    thirds = np.array(THIRDS)
    np.testing.assert_array_equal(d, thirds[idx])
    np.testing.assert_array_equal(h, thirds.astype(np.float16)[idx])
    np.testing.assert_array_equal(s, thirds.astype(np.float32)[idx])
    np.testing.assert_array_equal(b, np.array([300, -1, 127]).astype(np.int8)[idx])
    ptx = compile_source(source, "casts").ptx
    declared = re.findall(r"\.const \.align (\d) \.(\w+) (const_THIRDS\w*)\[3\]", ptx)
    assert declared == [("8", "f64", "const_THIRDS"), ("2", "b16", "const_THIRDS_f16"),
                        ("4", "f32", "const_THIRDS_f32")]


@pytest.mark.parametrize("table, dtype", [
    ("(True, False, True)", np.bool_),
    ("(1, 2.5, -3)", np.float32),           # ints beside a float: f32, as a variable would be
    ("(1, 2**40, -5)", np.int64),
    ("(1, 2**63 + 5)", np.uint64),
    ("(-2**31, 2**31 - 1)", np.int32),
])
def test_table_type_is_the_type_a_variable_would_have(table, dtype):
    source = src(f"""
T = {table}

@ptxpy.jit
def read(idx: Array[i32], out: Array[i32]):
    i = ptxpy.global_id(0)
    if i < idx.shape[0]:
        v = T[idx[i]]
        out[i] = i32(v == T[0])
""")
    values = eval(table)
    typed = driver.compile_kernel(driver.parse(source, "kernels.py"), "read",
                                  stop_after="typed").typed
    assert typed.kernel.locals["v"].numpy == np.dtype(dtype)
    idx = np.arange(len(values), dtype=np.int32)
    (out,) = run(source, "read", [idx, Out(len(values), np.int32)], grid=1, block=32)
    held = np.array(values).astype(dtype)
    np.testing.assert_array_equal(out, (held == held[0]).astype(np.int32))


def test_table_in_a_device_function_and_two_kernels():
    """One declaration per kernel, shared by the inlined calls of a device function."""
    source = src("""
@ptxpy.func
def weight(k: i32) -> f32:
    return GAUSS5[k]

@ptxpy.jit
def first(idx: Array[i32], out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < idx.shape[0]:
        out[i] = weight(idx[i]) + weight(4 - idx[i]) + GAUSS5[idx[i]]

@ptxpy.jit
def second(idx: Array[i32], out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < idx.shape[0]:
        out[i] = GAUSS5[idx[i]] * 2.0
""")
    idx = rng.integers(0, 5, 64).astype(np.int32)
    g = np.array(GAUSS5, np.float32)
    (out,) = run(source, "first", [idx, Out(64, np.float32)], grid=1, block=64)
    np.testing.assert_array_equal(out, (g[idx] + g[4 - idx]) + g[idx])
    (out,) = run(source, "second", [idx, Out(64, np.float32)], grid=1, block=64)
    np.testing.assert_array_equal(out, g[idx] * 2)
    for name in ("first", "second"):
        assert compile_source(source, name).ptx.count(".const .align") == 1


def test_compile_time_index_is_still_a_weak_constant():
    source = src("""
@ptxpy.jit
def k(out: Array[f64]):
    for j in ptxpy.static_range(3):
        out[j] = THIRDS[j] * f64(1.0)
""")
    ptx = compile_source(source, "k").ptx
    assert ".const" not in ptx
    (out,) = run(source, "k", [Out(3, np.float64)], grid=1, block=1)
    np.testing.assert_array_equal(out, np.array(THIRDS))


def test_ir_interpreter_reads_the_table():
    program = driver.parse(BLUR, "kernels.py")
    func = driver.compile_kernel(program, "blur", stop_after="ssa").ssa
    assert any(d.space == "const" and d.values == tuple(np.float32(GAUSS5)) for d in func.arrays)
    assert ".const const_GAUSS5: f32[5] align 4 = {0.0625, 0.25, 0.375, 0.25, 0.0625}" in str(func)
    x = np.arange(8, dtype=np.float32)
    out = np.full(8, -1, np.float32)
    interp.run_function(func, {"x": x, "out": out, "x_shape0": 8, "out_shape0": 8},
                        {"ntid.x": 8, "tid.x": 3, "ctaid.x": 0})
    assert out[3] == np.float32(sum(g * v for g, v in zip(GAUSS5, x[1:6])))


@pytest.mark.skipif(os.environ.get("PTXPY_TEST_DEVICE") == "gpu",
                    reason="the simulator's report of a trap")
def test_out_of_range_index_traps_with_debug():
    source = src("""
@ptxpy.jit
def k(idx: Array[i32], out: Array[i32]):
    out[0] = PRIMES[idx[0]]
""")
    (out,) = run(source, "k", [np.array([5], np.int32), Out(1, np.int32)], grid=1, block=1,
                 debug=True)
    assert out[0] == 13
    with pytest.raises(SimulatorError, match=r"index out of bounds: index 6 is not in \[0, 6\) "
                                             r"for axis 0 of 'PRIMES'"):
        run(source, "k", [np.array([6], np.int32), Out(1, np.int32)], grid=1, block=1, debug=True)


def compile_error(body: str) -> str:
    with pytest.raises(CompileError) as info:
        compile_source(src(body), "k")
    return str(info.value).splitlines()[0]


@pytest.mark.parametrize("body, message", [
    ("@ptxpy.jit\ndef k(x: Array[f32], i: f32):\n    x[0] = PRIMES[i]\n",
     "kernels.py:10:19: error: PRIMES[i]: a tuple constant's index must be an integer, got f32"),
    ("@ptxpy.jit\ndef k(x: Array[f32], i: i32):\n    x[0] = PRIMES[i, i]\n",
     "kernels.py:10:12: error: PRIMES[i, i]: index a tuple constant with one integer"),
    ("E = ()\n@ptxpy.jit\ndef k(x: Array[f32], i: i32):\n    x[0] = E[i]\n",
     "kernels.py:11:12: error: E[i]: 'E' is (); only a flat tuple of numbers can be indexed "
     "with a run-time value"),
    ("M = (-1, 2**63)\n@ptxpy.jit\ndef k(x: Array[f32], i: i32):\n    x[0] = M[i]\n",
     "kernels.py:11:12: error: 'M' mixes negative numbers with numbers from 2**63 on: no integer "
     "type holds them all, so it cannot be indexed at run time"),
    ("N = (1.0, float('nan'))\n@ptxpy.jit\ndef k(x: Array[i32], i: i32):\n    x[0] = i32(N[i])\n",
     "kernels.py:11:12: error: cannot convert nan to i32"),
    ("@ptxpy.jit\ndef k(x: Array[f32], i: i32):\n    PRIMES[i] = 3\n",
     "kernels.py:10:5: error: cannot assign to 'PRIMES[i]'"),
    ("@ptxpy.jit\ndef k(x: Array[f32], i: i32):\n    for j in ptxpy.static_range(PRIMES[i]):\n"
     "        x[j] = 1.0\n",
     "kernels.py:10:33: error: an argument of ptxpy.static_range must be a compile-time constant: "
     "literals, module constants, Const parameters and arithmetic on them ('i' is a variable)"),
])
def test_errors(body, message):
    assert compile_error(body) == message
