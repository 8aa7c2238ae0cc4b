"""A kernel's register bounds and Hopper's register hand-over between warpgroups.

`@ptxpy.jit(max_registers=N)` (PTX `.maxnreg`) and `launch_bounds=threads` or `(threads, blocks
per SM)` (`.maxntid`, `.minnctapersm`: CUDA's `__launch_bounds__`); `ptxpy.setmaxnreg_inc(n)` /
`setmaxnreg_dec(n)` (PTX `setmaxnreg`). Checked: the directives in the PTX, the registers ptxas
then gives, results against NumPy (simulator; the GPU with PTXPY_TEST_DEVICE=gpu), the errors of
the compiler, the decorator, `ptxpy.transpile` and the command line."""
import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ptxpy
from kernel_harness import Out, compile_source, run
from ptxpy import Array, f32
from ptxpy.cli import main
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.transpiler import interp, ptxas
from ptxpy.transpiler.errors import CompileError

ON_GPU = os.environ.get("PTXPY_TEST_DEVICE") == "gpu"
needs_ptxas = pytest.mark.skipif(ptxas.find_ptxas() is None, reason="no ptxas")

HEADER = """
import ptxpy
from ptxpy import Array, f32
"""

# 64 values per thread, all loaded before the products that read them
PRESSURE = HEADER + """
@ptxpy.jit
def pressure(x: Array[f32, 2], out: Array[f32, 1]):
    t = ptxpy.block_idx.x * ptxpy.block_dim.x + ptxpy.thread_idx.x
    if t < x.shape[0]:
        v = ptxpy.local_array((64,), f32)
        for j in ptxpy.static_range(64):
            v[j] = x[t, j]
        s = 0.0
        for j in ptxpy.static_range(64):
            s += v[j] * v[(j * 7 + 3) % 64]
        out[t] = s
"""

# three warpgroups: the first gives registers back and doubles, the others take more and add
SPECIALISED = HEADER + """
@ptxpy.jit
def specialised(x: Array[f32, 1], out: Array[f32, 1]):
    t = ptxpy.thread_idx.x
    i = ptxpy.block_idx.x * 384 + t
    if t < 128:
        ptxpy.setmaxnreg_dec(40)
        out[i] = 2.0 * x[i]
    else:
        ptxpy.setmaxnreg_inc(232)
        out[i] = x[i] + 1.0
"""


def pressure_expected(x: np.ndarray) -> np.ndarray:
    return sum(x[:, j].astype(np.float64) * x[:, (j * 7 + 3) % 64] for j in range(64))


def directives(ptx: str) -> list[str]:
    """The lines between the parameter list's `)` and the body's `{`."""
    head = ptx[ptx.index(".visible .entry"):]
    return head[head.index(")\n") + 2:head.index("{")].split()


@pytest.mark.parametrize("bounds, expected", [
    ({}, []),
    ({"launch_bounds": (256,)}, [".maxntid", "256,", "1,", "1"]),
    ({"launch_bounds": (256, 2)}, [".maxntid", "256,", "1,", "1", ".minnctapersm", "2"]),
    ({"max_registers": 64}, [".maxnreg", "64"]),
    ({"max_registers": 40, "launch_bounds": (128, 4)},
     [".maxntid", "128,", "1,", "1", ".minnctapersm", "4", ".maxnreg", "40"]),
])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_directives_stand_between_the_parameters_and_the_body(bounds, expected, arch):
    kernel = compile_source(PRESSURE, "pressure", arch=arch, **bounds)
    assert directives(kernel.ptx) == expected
    if ptxas.find_ptxas():
        ok, log, _ = ptxas.assemble(kernel.ptx, arch)
        assert ok, log


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("bounds, most", [({"max_registers": 24}, 24),
                                          ({"launch_bounds": (1024, 2)}, 32)])
def test_ptxas_keeps_to_the_bound(arch, bounds, most):
    """65536 registers per SM over 2 blocks of 1024 threads leave 32 a thread."""
    free = ptxas.assemble(compile_source(PRESSURE, "pressure", arch=arch).ptx, arch)[2]
    bounded = ptxas.assemble(compile_source(PRESSURE, "pressure", arch=arch, **bounds).ptx, arch)[2]
    assert free > most >= bounded


def test_a_bounded_kernel_computes_the_same():
    x = np.random.default_rng(1).standard_normal((200, 64)).astype(np.float32)
    (out,) = run(PRESSURE, "pressure", [x, Out((200,), np.float32)], grid=2, block=128,
                 max_registers=24)
    np.testing.assert_allclose(out, pressure_expected(x), rtol=1e-4, atol=1e-4)


# --- setmaxnreg ------------------------------------------------------------------------------

@pytest.mark.parametrize("bounds", [{"launch_bounds": (384, 1)}, {"max_registers": 168}])
def test_warpgroups_hand_registers_over(bounds):
    x = np.random.default_rng(2).standard_normal(768).astype(np.float32)
    (out,) = run(SPECIALISED, "specialised", [x, Out((768,), np.float32)], grid=2, block=384,
                 archs=("sm_90",), **bounds)
    first = (np.arange(768) % 384) < 128
    np.testing.assert_array_equal(out, np.where(first, 2 * x, x + 1))


@needs_ptxas
def test_the_ptx_of_setmaxnreg_and_ptxas_keeps_it():
    kernel = compile_source(SPECIALISED, "specialised", launch_bounds=(384, 1))
    assert ".target sm_90a" in kernel.ptx
    assert re.search(r"^\s+setmaxnreg\.dec\.sync\.aligned\.u32 40;$", kernel.ptx, re.M)
    assert re.search(r"^\s+setmaxnreg\.inc\.sync\.aligned\.u32 232;$", kernel.ptx, re.M)
    ok, log, registers = ptxas.assemble(kernel.ptx, "sm_90")
    assert ok, log
    assert "ignored" not in log          # ptxas drops setmaxnreg it cannot place (C7508)
    assert registers == 168              # 65536 / 384 threads, in steps of 8


def test_the_ir_interpreter_passes_setmaxnreg():
    program = ptxpy.transpiler.driver.parse(SPECIALISED, "kernels.py")
    options = ptxpy.transpiler.driver.Options("sm_90", launch_bounds=(384, 1))
    func = ptxpy.transpiler.driver.compile_kernel(program, "specialised", None, frozenset(),
                                                  options).ssa
    x = np.arange(384, dtype=np.float32)
    out = np.zeros(384, np.float32)
    for t in (0, 200):
        interp.run_function(func, {"x": x, "out": out}, {"tid.x": t, "ntid.x": 384, "ctaid.x": 0},
                            lone_thread=True)
    assert (out[0], out[200]) == (0.0, 201.0)


@pytest.mark.skipif(ON_GPU, reason="the simulator's check (the card hangs or faults)")
def test_part_of_a_warpgroup_at_setmaxnreg_is_an_error():
    source = SPECIALISED.replace("if t < 128:", "if t < 64:")
    with pytest.raises(SimulatorError, match="128 threads of a warpgroup must execute it together"):
        run(source, "specialised", [np.zeros(384, np.float32), Out((384,), np.float32)], grid=1,
            block=384, archs=("sm_90",), launch_bounds=(384, 1))


@pytest.mark.parametrize("call, message", [
    ("ptxpy.setmaxnreg_dec(20)", "needs a constant n from 24 to 256, a multiple of 8.*got 20"),
    ("ptxpy.setmaxnreg_inc(100)", "a multiple of 8.*got 100"),
    ("ptxpy.setmaxnreg_inc(t)", "register count of ptxpy.setmaxnreg_inc"),
    ("ptxpy.setmaxnreg_inc()", r"takes 1 argument \(0 given\)"),
])
def test_a_bad_register_count_is_an_error(call, message):
    source = SPECIALISED.replace("ptxpy.setmaxnreg_dec(40)", call)
    with pytest.raises(CompileError, match=message) as err:
        compile_source(source, "specialised", launch_bounds=(384, 1))
    assert err.value.loc[0] == 10


def test_setmaxnreg_without_a_register_bound_is_an_error():
    for bounds in ({}, {"launch_bounds": (384,)}):
        with pytest.raises(CompileError, match="needs the kernel's register count at its start: "
                                               "give @ptxpy.jit max_registers=N") as err:
            compile_source(SPECIALISED, "specialised", **bounds)
        assert err.value.loc == (10, 8)


def test_setmaxnreg_on_sm_80_is_an_error():
    with pytest.raises(CompileError, match=r"setmaxnreg_dec needs sm_90 \(Hopper: sm_90a\); the "
                                           "target is sm_80"):
        compile_source(SPECIALISED, "specialised", arch="sm_80", launch_bounds=(384, 1))


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=lambda x: x.shape[0], launch_bounds=(384, 1))
def handing_over(x: Array[f32, 1], out: Array[f32, 1]):
    t = ptxpy.thread_idx.x
    if t < 128:
        ptxpy.setmaxnreg_dec(40)
        out[t] = 2.0 * x[t]
    else:
        ptxpy.setmaxnreg_inc(232)
        out[t] = x[t] + 1.0


def test_through_jax_and_a_block_of_part_of_a_warpgroup_refused_before_launch():
    x = np.random.default_rng(3).standard_normal(384).astype(np.float32)
    out = np.asarray(jax.jit(handing_over)(jnp.asarray(x)))
    np.testing.assert_array_equal(out, np.where(np.arange(384) < 128, 2 * x, x + 1))
    with pytest.raises(ValueError, match=r"block \(320, 1, 1\) has 320 threads, not a multiple "
                                         r"of 128: the kernel calls ptxpy.wgmma or "
                                         r"ptxpy.setmaxnreg_\*"):
        handing_over(jnp.zeros(320, jnp.float32))


# --- the decorator, ptxpy.transpile, the command line -------------------------------------------

def grid_of(x):
    return (ptxpy.cdiv(x.shape[0], 128),)


@ptxpy.jit(out_shape=lambda x: x, grid=grid_of, block=128, max_registers=32,
           launch_bounds=(128, 8))
def scaled(x: Array[f32, 1], out: Array[f32, 1]):
    i = ptxpy.block_idx.x * ptxpy.block_dim.x + ptxpy.thread_idx.x
    if i < x.shape[0]:
        out[i] = 3.0 * x[i]


@ptxpy.jit(out_shape=lambda x: x, grid=grid_of, block=128, launch_bounds=64)
def narrow(x: Array[f32, 1], out: Array[f32, 1]):
    i = ptxpy.block_idx.x * ptxpy.block_dim.x + ptxpy.thread_idx.x
    if i < x.shape[0]:
        out[i] = 3.0 * x[i]


def test_the_decorator_compiles_with_its_bounds_and_runs():
    x = jnp.arange(1000, dtype=jnp.float32)
    assert directives(scaled.ptx(x)) == [".maxntid", "128,", "1,", "1", ".minnctapersm", "8",
                                         ".maxnreg", "32"]
    np.testing.assert_array_equal(np.asarray(scaled(x)), 3 * np.arange(1000, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(jax.jit(scaled)(x + 1)),
                                  3 * np.arange(1, 1001, dtype=np.float32))


def test_a_block_larger_than_the_bound_is_an_error_before_launch():
    with pytest.raises(ValueError, match=r"narrow: a block of 128 threads \(128, 1, 1\) is more "
                                         r"than launch_bounds allows \(64\)"):
        narrow(jnp.zeros(10, jnp.float32))


def make(**options):
    return ptxpy.jit(scaled.fn, out_shape=lambda x: x, grid=grid_of, block=128, **options)


@pytest.mark.parametrize("options, message", [
    ({"max_registers": 300}, "max_registers must be an int from 24 to 255, got 300"),
    ({"max_registers": "64"}, "max_registers must be an int from 24 to 255, got '64'"),
    ({"max_registers": 16}, "got 16"),
    ({"launch_bounds": 0}, r"launch_bounds must be threads \(1 to 1024\) or \(threads, blocks "
                           r"per SM from 1 to 32\), got 0"),
    ({"launch_bounds": (2048,)}, r"got \(2048,\)"),
    ({"launch_bounds": (256, 0)}, r"got \(256, 0\)"),
    ({"launch_bounds": (256, 1, 1)}, r"got \(256, 1, 1\)"),
    ({"launch_bounds": "256"}, r"got '256'"),
    ({"launch_bounds": (256.0,)}, r"got \(256.0,\)"),
])
def test_bad_bounds_are_an_error_of_the_decorator(options, message):
    with pytest.raises(ValueError, match="@ptxpy.jit of scaled: .*" + message):
        make(**options)


def test_transpile_takes_the_bounds():
    ptx = ptxpy.transpile(PRESSURE, max_registers=48, launch_bounds=512)["pressure"]
    assert directives(ptx) == [".maxntid", "512,", "1,", "1", ".maxnreg", "48"]
    with pytest.raises(ValueError, match=r"transpile: launch_bounds must be"):
        ptxpy.transpile(PRESSURE, launch_bounds=(1, 2, 3))


def test_the_command_line_takes_the_bounds(tmp_path, capsys):
    source = tmp_path / "k.py"
    source.write_text(SPECIALISED)
    assert main(["transpile", str(source), "--launch-bounds", "384,1", "--max-registers",
                 "200"]) == 0
    ptx = (tmp_path / "specialised.ptx").read_text()
    assert directives(ptx) == [".maxntid", "384,", "1,", "1", ".minnctapersm", "1", ".maxnreg",
                               "200"]
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
    assert main(["transpile", str(source)]) == 1
    assert "needs the kernel's register count at its start" in capsys.readouterr().err
    for option, value, message in (
            ("--max-registers", "many", "--max-registers expects an integer, got 'many'"),
            ("--max-registers", "8", "--max-registers must be an int from 24 to 255, got 8"),
            ("--launch-bounds", "384,x", "--launch-bounds expects an integer, got 'x'"),
            ("--launch-bounds", "0", r"--launch-bounds must be threads (1 to 1024)")):
        assert main(["transpile", str(source), option, value]) == 2
        assert f"ptxpy: error: {message}" in capsys.readouterr().err


# --- the decorator's bounds read from the source ---------------------------------------------

DECORATED = HEADER + """
THREADS = 3 * 128


@ptxpy.jit(out_shape=None, block=THREADS, launch_bounds=(THREADS, 1), max_registers={REGS})
def specialised(x: Array[f32, 1], out: Array[f32, 1]):
    t = ptxpy.thread_idx.x
    if t < 128:
        ptxpy.setmaxnreg_dec(40)
    else:
        ptxpy.setmaxnreg_inc(232)
    out[t] = x[t]
"""


def test_the_command_line_and_transpile_take_the_decorator_s_constant_bounds(tmp_path):
    source = tmp_path / "k.py"
    source.write_text(DECORATED.format(REGS="THREADS // 2"))
    assert main(["transpile", str(source)]) == 0
    written = [".maxntid", "384,", "1,", "1", ".minnctapersm", "1", ".maxnreg", "192"]
    assert directives((tmp_path / "specialised.ptx").read_text()) == written
    assert directives(ptxpy.transpile(source.read_text())["specialised"]) == written
    assert main(["transpile", str(source), "--launch-bounds", "512,1", "--max-registers", "96"]) == 0
    assert directives((tmp_path / "specialised.ptx").read_text()) == [
        ".maxntid", "512,", "1,", "1", ".minnctapersm", "1", ".maxnreg", "96"]


def test_bounds_computed_at_import_are_the_decorator_s_alone():
    source = DECORATED.format(REGS="None").replace("launch_bounds=(THREADS, 1)",
                                                   "launch_bounds=bounds()")
    with pytest.raises(CompileError, match="needs the kernel's register count at its start"):
        ptxpy.transpile(source)
    assert directives(ptxpy.transpile(source, launch_bounds=(384, 1))["specialised"])[:4] == \
        [".maxntid", "384,", "1,", "1"]


def test_a_constant_bound_out_of_range_is_the_kernel_s_error():
    source = DECORATED.format(REGS="THREADS")
    with pytest.raises(CompileError, match=r"@ptxpy.jit: max_registers must be an int from 24 to "
                                           r"255, got 384") as err:
        ptxpy.transpile(source)
    assert err.value.loc == (8, 84)


def test_numpy_integers_are_bounds_and_bools_are_not():
    assert ptxpy.transpiler.driver.register_bounds(np.int64(64), (np.int32(256), np.uint8(2))) \
        == (64, (256, 2))
    assert ptxpy.transpiler.driver.register_bounds(None, [128]) == (None, (128,))
    for bad in ({"max_registers": True}, {"max_registers": np.bool_(True)},
                {"launch_bounds": (256, True)}, {"launch_bounds": ()}):
        with pytest.raises(ValueError, match="must be"):
            ptxpy.transpiler.driver.register_bounds(**bad)
