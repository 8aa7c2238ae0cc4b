"""Device `print` (lowered to vprintf) and the checks of `debug=True`, end to end:
Python source -> PTX -> ptxas (sm_80, sm_90) -> simulator, with the printed text compared exactly.

Output is captured with capfd so that the same tests read the GPU's printf (which the driver
writes to file descriptor 1) under PTXPY_TEST_DEVICE=gpu.
"""
import os
import re

import numpy as np
import pytest

from kernel_harness import Out, assemble_all, compile_source, run
from ptxpy.runtime.simulator import SimulatorError, run_kernel
from ptxpy.transpiler import driver
from ptxpy.transpiler.errors import CompileError

ON_GPU = os.environ.get("PTXPY_TEST_DEVICE") == "gpu"

HEADER = """import ptxpy
from ptxpy import Array, bf16, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
"""


def src(body: str) -> str:
    return HEADER + body


def line_of(source: str, statement: str) -> int:
    """The 1-based line of the only line of `source` that contains `statement`."""
    (line,) = [n for n, text in enumerate(source.splitlines(), 1) if statement in text]
    return line


def printed(capfd) -> str:
    return capfd.readouterr().out


def run_failing(source: str, name: str, args: list, grid=1, block=1) -> str:
    """Run a debug kernel whose check fails; return the error (the simulator's message)."""
    with pytest.raises(Exception) as err:
        run(source, name, args, grid=grid, block=block, debug=True)
    if ON_GPU:
        return ""
    assert err.type is SimulatorError, err.value
    return str(err.value)


# ---- print ---------------------------------------------------------------------------------

EVERY_TYPE = src("""
@ptxpy.jit
def show(p: bool, a: i8, b: i16, c: i32, d: i64, e: u8, f: u16, g: u32, h: u64,
         k: f16, m: bf16, n: f32, o: f64):
    print(p, a, b, c, d)
    print(e, f, g, h)
    print(k, m, n, o)
""")


def test_print_every_scalar_type(capfd):
    bfloat16 = pytest.importorskip("ml_dtypes").bfloat16
    args = [True, -5, -300, -70000, -5_000_000_000, 200, 60000, 4_000_000_000,
            18_000_000_000_000_000_000, np.float16(1.5), bfloat16(-2.25), np.float32(0.1), 1e10]
    run(EVERY_TYPE, "show", args, grid=1, block=1)
    assert printed(capfd) == ("1 -5 -300 -70000 -5000000000\n"
                              "200 60000 4000000000 18000000000000000000\n"
                              "1.500000 -2.250000 0.100000 10000000000.000000\n")


def test_print_extremes_of_each_integer_width(capfd):
    source = src("""
@ptxpy.jit
def k(a: i8, b: i16, c: i32, d: i64, e: u8, f: u16, g: u32, h: u64):
    print(a, b, c, d, e, f, g, h)
""")
    args = [-128, -32768, -2**31, -2**63, 255, 65535, 2**32 - 1, 2**64 - 1]
    run(source, "k", args, grid=1, block=1)
    assert printed(capfd) == " ".join(map(str, args)) + "\n"


def test_print_literals_as_python_prints_them(capfd):
    source = src("""
@ptxpy.jit
def k(out: Array[i32]):
    print("text", 7, -3, 2.5, True, False, 1e20, 2**40, "100%", 0.1, -0.0)
""")
    run(source, "k", [Out(1, np.int32)], grid=1, block=1)
    assert printed(capfd) == "text 7 -3 2.5 True False 1e+20 1099511627776 100% 0.1 -0.0\n"


def test_print_special_floats(capfd):
    source = src("""
@ptxpy.jit
def k(x: Array[f32]):
    print(x[0], x[1], x[2], x[3])
""")
    run(source, "k", [np.array([np.inf, -np.inf, 1e-7, -123.456], np.float32)], grid=1, block=1)
    assert printed(capfd) == "inf -inf 0.000000 -123.456001\n"


def test_print_sep_and_end(capfd):
    source = src("""
@ptxpy.jit
def k(n: i32):
    print("a", n, "b", sep=", ", end=";\\n")
    print(n, n, sep="")
    print("50%", n, sep="%", end="%\\n")
    print("no newline", end="")
    print()
    print(end="")
    print("tab\\tquote\\"")
""")
    run(source, "k", [42], grid=1, block=1)
    assert printed(capfd) == 'a, 42, b;\n4242\n50%%42%\nno newline\ntab\tquote"\n'


def test_print_from_several_threads_in_thread_order(capfd):
    source = src("""
@ptxpy.jit
def k(x: Array[f32]):
    i = ptxpy.global_id(0)
    print("block", ptxpy.block_idx.x, "thread", ptxpy.thread_idx.x, "x =", x[i])
    if i % 2 == 1:
        print("odd", i)
""")
    x = np.arange(8, dtype=np.float32) / 4
    run(source, "k", [x], grid=2, block=4)
    first = [f"block {i // 4} thread {i % 4} x = {x[i]:f}" for i in range(8)]
    odd = [f"odd {i}" for i in range(8) if i % 2]
    lines = printed(capfd).splitlines()
    if ON_GPU:   # the GPU does not order blocks
        assert sorted(lines) == sorted(first + odd)
    else:        # the simulator runs a print for all its threads at once, in thread order
        assert lines == first + odd


def test_print_non_ascii_text(capfd):
    source = src("""
@ptxpy.jit
def k(n: i32):
    print("héllo ✓", n)   # ptxas takes ASCII only, even in comments: the PTX escapes the rest
""")
    run(source, "k", [3], grid=1, block=1)
    assert printed(capfd) == "héllo ✓ 3\n"
    ptx = compile_source(source, "k").ptx
    assert ptx.isascii() and '// $str0 = "h\\xe9llo \\u2713 %d\\n"' in ptx
    assert '// line 6: print("h\\xe9llo \\u2713", n)   # ptxas' in ptx


def test_print_in_a_loop_and_in_a_device_function(capfd):
    source = src("""
@ptxpy.func
def report(k: i32, v: f64) -> f64:
    print("step", k, v)
    return v * 2.0

@ptxpy.jit
def k(n: i32):
    v: f64 = 1.0
    for j in range(n):
        v = report(j, v)
    print("final", v)
""")
    run(source, "k", [3], grid=1, block=1)
    assert printed(capfd) == ("step 0 1.000000\nstep 1 2.000000\nstep 2 4.000000\n"
                              "final 8.000000\n")


def test_print_ptx_reads_like_nvcc():
    source = src("""
@ptxpy.jit
def k(x: Array[f64], n: i64):
    i = ptxpy.global_id(0)
    print("i =", i, "x =", x[i], "n =", n)
    print("i =", i, "x =", x[i], "n =", n)
    print("done")
""")
    assemble_all(source, "k")
    ptx = compile_source(source, "k").ptx
    assert (".extern .func (.param .b32 func_retval0) vprintf\n(\n    .param .b64 vprintf_param_0,\n"
            "    .param .b64 vprintf_param_1\n)\n;\n") in ptx
    # one constant per distinct format string, its text in a comment above it
    fmt = b"i = %d x = %f n = %lld\n\0"
    assert re.findall(r"(?m)^// \$str.*\n\.global .*", ptx) == [
        '// $str0 = "i = %d x = %f n = %lld\\n"\n'
        f".global .align 1 .b8 $str0[{len(fmt)}] = {{{', '.join(map(str, fmt))}}};",
        '// $str1 = "done\\n"\n.global .align 1 .b8 $str1[6] = {100, 111, 110, 101, 10, 0};']
    # i32 at 0, f64 at 8, i64 at 16 (C varargs alignment) in one per-thread buffer
    assert "    .local .align 8 .b8 printf_args[24];" in ptx
    stores = re.findall(r"st\.local\.\w+ \[printf_args[+\d]*\]", ptx)
    assert stores == ["st.local.s32 [printf_args]", "st.local.f64 [printf_args+8]",
                      "st.local.s64 [printf_args+16]"] * 2
    call = (r"    mov\.u64 (%rd\d+), \$str0;\n    cvta\.global\.u64 (%rd\d+), \1;\n"
            r"    mov\.u64 (%rd\d+), printf_args;\n    cvta\.local\.u64 (%rd\d+), \3;\n"
            r"    \{\n    \.param \.b64 param0;\n    st\.param\.b64 \[param0\], \2;\n"
            r"    \.param \.b64 param1;\n    st\.param\.b64 \[param1\], \4;\n"
            r"    \.param \.b32 retval0;\n    call\.uni \(retval0\), vprintf, \(param0, param1\);\n"
            r"    \}\n")
    assert len(re.findall(call, ptx)) == 2, ptx
    assert ptx.count("call.uni (retval0), vprintf, (param0, param1);") == 3


def test_print_without_values_passes_a_null_buffer():
    source = src("""
@ptxpy.jit
def k(n: i32):
    print("hello")
""")
    assemble_all(source, "k")
    ptx = compile_source(source, "k").ptx
    assert "printf_args" not in ptx
    assert re.search(r"mov\.u64 (%rd\d+), 0;\n    \{\n    \.param \.b64 param0;\n"
                     r"    st\.param\.b64 \[param0\], %rd\d+;\n    \.param \.b64 param1;\n"
                     r"    st\.param\.b64 \[param1\], \1;", ptx), ptx


def test_kernels_without_print_declare_no_vprintf():
    plain = compile_source(src("""
@ptxpy.jit
def k(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    out[i] = x[i]
"""), "k").ptx
    assert "vprintf" not in plain and "$str" not in plain and ".local" not in plain


def test_print_errors_are_located():
    too_many = src("@ptxpy.jit\ndef k(n: i32):\n    print(" + ", ".join(["n"] * 33) + ")\n")
    with pytest.raises(CompileError) as err:
        compile_source(too_many, "k")
    assert str(err.value).splitlines()[0] == (
        "kernels.py:5:5: error: print() with 33 values: device printf takes at most 32 "
        "(literals do not count)")
    nul = src('@ptxpy.jit\ndef k(n: i32):\n    print("a\\0b", n)\n')
    with pytest.raises(CompileError) as err:
        compile_source(nul, "k")
    assert str(err.value).splitlines()[0] == (
        "kernels.py:5:11: error: print() text cannot contain a NUL character ('\\0')")   # at the text


# ---- debug=True ----------------------------------------------------------------------------

ASSERTS = src("""
@ptxpy.jit
def d(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    assert i < 30, 'too big'
    out[i] = x[i] * 2.0
""")


def test_failed_assert_prints_its_message_and_stops(capfd):
    line = line_of(ASSERTS, "assert i < 30")
    error = run_failing(ASSERTS, "d", [np.arange(32, dtype=np.float32), Out(32, np.float32)], block=32)
    message = f"kernels.py:{line}: assertion failed: too big"
    assert printed(capfd) == f"{message}\n{message}\n"   # threads 30 and 31
    if not ON_GPU:
        assert error == f"{message}; thread (30,0,0) block (0,0,0)"


def test_assert_without_message_names_the_condition(capfd):
    source = src("""
@ptxpy.jit
def d(x: Array[f32], n: i32):
    assert n > 0 and x[0] == 0.0
""")
    line = line_of(source, "assert n > 0")
    error = run_failing(source, "d", [np.zeros(1, np.float32), 0])
    assert printed(capfd) == f"kernels.py:{line}: assertion failed: n > 0 and x[0] == 0.0\n"
    if not ON_GPU:
        assert error == (f"kernels.py:{line}: assertion failed: n > 0 and x[0] == 0.0; "
                         "thread (0,0,0) block (0,0,0)")


def test_assert_message_with_percent_and_quotes(capfd):
    source = src("""
@ptxpy.jit
def d(n: i32):
    assert n != 3, "100% \\"wrong\\" %d"
""")
    run_failing(source, "d", [3])
    assert printed(capfd) == f'kernels.py:{line_of(source, "assert")}: assertion failed: 100% "wrong" %d\n'


def test_out_of_bounds_read(capfd):
    source = src("""
@ptxpy.jit
def d(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    v = x[i + 1]
    out[i] = v
""")
    line = line_of(source, "v = x[i + 1]")
    error = run_failing(source, "d", [np.zeros(8, np.float32), Out(8, np.float32)], block=8)
    message = f"kernels.py:{line}: index out of bounds: index 8 is not in [0, 8) for axis 0 of 'x'"
    assert printed(capfd) == message + "\n"
    if not ON_GPU:
        assert error == f"{message}; thread (7,0,0) block (0,0,0)"


def test_out_of_bounds_write(capfd):
    source = src("""
@ptxpy.jit
def d(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    out[i] = x[i]
""")
    line = line_of(source, "out[i] = x[i]")
    error = run_failing(source, "d", [np.zeros(8, np.float32), Out(6, np.float32)], grid=2, block=4)
    message = f"kernels.py:{line}: index out of bounds: index {{}} is not in [0, 6) for axis 0 of 'out'\n"
    assert printed(capfd) == message.format(6) + message.format(7)
    if not ON_GPU:
        assert error == message.format(6).rstrip() + "; thread (2,0,0) block (1,0,0)"


def test_negative_index(capfd):
    source = src("""
@ptxpy.jit
def d(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    out[i] = x[i - 1]
""")
    line = line_of(source, "x[i - 1]")
    error = run_failing(source, "d", [np.zeros(4, np.float32), Out(4, np.float32)], block=4)
    message = f"kernels.py:{line}: index out of bounds: index -1 is not in [0, 4) for axis 0 of 'x'"
    assert printed(capfd) == message + "\n"
    if not ON_GPU:
        assert error == f"{message}; thread (0,0,0) block (0,0,0)"



@pytest.mark.parametrize("ty", ["u32", "u64", "i64"])
def test_an_out_of_bounds_index_is_printed_as_its_type_reads_it(capfd, ty):
    """A u64 index of 2**64 - 1 is that number, not -1 (the message once printed every index
    as a signed 64-bit one)."""
    source = src(f"""
@ptxpy.jit
def d(x: Array[f32], j: Array[{ty}], out: Array[f32]):
    out[0] = x[j[0]]
""")
    line = line_of(source, "x[j[0]]")
    dtype = {"u32": np.uint32, "u64": np.uint64, "i64": np.int64}[ty]
    index = np.iinfo(dtype).max if ty != "i64" else -1
    error = run_failing(source, "d", [np.zeros(4, np.float32), np.array([index], dtype),
                                      Out(1, np.float32)], block=1)
    message = f"kernels.py:{line}: index out of bounds: index {index} is not in [0, 4) for axis 0 of 'x'"
    assert printed(capfd) == message + "\n"
    if not ON_GPU:
        assert error == f"{message}; thread (0,0,0) block (0,0,0)"

TWO_D = src("""
@ptxpy.jit
def d(x: Array[f32, 2], di: i32, dj: i32, out: Array[f32, 2]):
    i = ptxpy.thread_idx.y
    j = ptxpy.thread_idx.x
    v = x[i + di, j + dj]
    out[i, j] = v
""")


@pytest.mark.parametrize("di, dj, axis, index, extent", [
    (1, 0, 0, 3, 3), (0, 1, 1, 5, 5), (-1, 0, 0, -1, 3), (0, -1, 1, -1, 5)])
def test_out_of_bounds_read_of_each_axis_of_a_2d_array(capfd, di, dj, axis, index, extent):
    line = line_of(TWO_D, "v = x[")
    error = run_failing(TWO_D, "d", [np.zeros((3, 5), np.float32), di, dj, Out((3, 5), np.float32)],
                        block=(5, 3))
    message = (f"kernels.py:{line}: index out of bounds: index {index} is not in [0, {extent}) "
               f"for axis {axis} of 'x'")
    assert set(printed(capfd).splitlines()) == {message}
    if not ON_GPU:
        assert error.startswith(message + "; thread ")


@pytest.mark.parametrize("rows, cols, axis, extent", [(2, 5, 0, 2), (3, 4, 1, 4)])
def test_out_of_bounds_write_of_each_axis_of_a_2d_array(capfd, rows, cols, axis, extent):
    line = line_of(TWO_D, "out[i, j] = v")
    error = run_failing(TWO_D, "d", [np.zeros((3, 5), np.float32), 0, 0, Out((rows, cols), np.float32)],
                        block=(5, 3))
    message = (f"kernels.py:{line}: index out of bounds: index {extent} is not in [0, {extent}) "
               f"for axis {axis} of 'out'")
    assert set(printed(capfd).splitlines()) == {message}
    if not ON_GPU:
        thread = "(0,2,0)" if axis == 0 else "(4,0,0)"
        assert error == f"{message}; thread {thread} block (0,0,0)"


VECTORS = src("""
@ptxpy.jit
def d(x: Array[f32], s: i32, t: i32, out: Array[f32]):
    a, b, c, e = x[s:s + 4]
    out[t:t + 2] = (a + b, c + e)
""")


def test_misaligned_vector_load(capfd):
    line = line_of(VECTORS, "x[s:s + 4]")
    error = run_failing(VECTORS, "d", [np.zeros(8, np.float32), 2, 0, Out(4, np.float32)])
    message = f"kernels.py:{line}: misaligned vector access to 'x' at element 2 (must be a multiple of 4)"
    assert printed(capfd) == message + "\n"
    if not ON_GPU:
        assert error == f"{message}; thread (0,0,0) block (0,0,0)"


def test_misaligned_vector_store(capfd):
    line = line_of(VECTORS, "out[t:t + 2]")
    error = run_failing(VECTORS, "d", [np.zeros(8, np.float32), 4, 1, Out(4, np.float32)])
    message = f"kernels.py:{line}: misaligned vector access to 'out' at element 1 (must be a multiple of 2)"
    assert printed(capfd) == message + "\n"
    if not ON_GPU:
        assert error == f"{message}; thread (0,0,0) block (0,0,0)"


def test_vector_access_past_the_end(capfd):
    line = line_of(VECTORS, "x[s:s + 4]")
    run_failing(VECTORS, "d", [np.zeros(6, np.float32), 4, 0, Out(4, np.float32)])
    assert printed(capfd) == (f"kernels.py:{line}: index out of bounds: index 7 is not in [0, 6) "
                              "for axis 0 of 'x'\n")


def test_passing_debug_kernel_gives_the_right_results(capfd):
    source = src("""
@ptxpy.jit
def d(x: Array[f32, 2], v: Array[f32], out: Array[f32, 2], sums: Array[f32]):
    i = ptxpy.thread_idx.y
    j = ptxpy.thread_idx.x
    assert i < x.shape[0] and j < x.shape[1], "grid too large"
    out[i, j] = x[i, j] * 2.0 + x[x.shape[0] - 1 - i, j]
    if i == 0 and j % 4 == 0:
        a, b, c, e = v[j:j + 4]
        sums[j:j + 2] = (a + b, c + e)
""")
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    v = np.arange(8, dtype=np.float32) + 1
    out, sums = run(source, "d", [x, v, Out((3, 8), np.float32), Out(8, np.float32)],
                    grid=1, block=(8, 3), debug=True)
    np.testing.assert_array_equal(out, x * 2 + x[::-1])
    np.testing.assert_array_equal(sums, [3, 7, 0, 0, 11, 15, 0, 0])
    assert printed(capfd) == ""


@pytest.mark.parametrize("source", [ASSERTS, TWO_D, VECTORS], ids=["assert", "2d", "vectors"])
def test_no_checks_without_debug(source):
    name = "d"
    plain = compile_source(source, name).ptx
    for absent in ("trap", "vprintf", "$str", "printf_args", "assertion", "bounds"):
        assert absent not in plain
    checked = compile_source(source, name, debug=True).ptx
    assert "trap;" in checked and "vprintf" in checked


def test_without_debug_a_failing_assert_is_not_evaluated():
    (out,) = run(ASSERTS, "d", [np.arange(32, dtype=np.float32), Out(32, np.float32)],
                 grid=1, block=32)
    np.testing.assert_array_equal(out, np.arange(32, dtype=np.float32) * 2)


def test_message_names_the_file_given_to_the_compiler():
    source = src("""
@ptxpy.jit
def d(n: i32):
    assert n < 3
""")
    program = driver.parse(source, "/work/my 100%/kern.py")
    ptx = driver.compile_kernel(program, "d", options=driver.Options("sm_90", False, True)).kernel.ptx
    line = line_of(source, "assert n < 3")
    assert f'// $str0 = "/work/my 100%%/kern.py:{line}: assertion failed: n < 3\\n"' in ptx
    with pytest.raises(SimulatorError) as err:
        run_kernel(ptx, "d", 1, 1, [7])
    assert str(err.value) == (f"/work/my 100%/kern.py:{line}: assertion failed: n < 3; "
                              "thread (0,0,0) block (0,0,0)")
