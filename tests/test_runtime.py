"""Tests of ptxpy.runtime: caches, argument checking and the FFI plumbing (everywhere), and
kernel launches from JAX (`gpu`, skipped without a CUDA GPU).

The GPU kernels are hand-written PTX following docs/ptx-dialect.md, so these tests do not depend
on the transpiler.
"""
from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
import threading
import warnings

import ml_dtypes
import numpy as np
import pytest

import jax
import jax.numpy as jnp

import ptxpy
from ptxpy import types as T
from ptxpy.runtime import cache, driver, ffi
from ptxpy.runtime import compiler as runtime_compiler
from ptxpy.runtime import launch as launch_mod
from ptxpy.runtime.launch import launch
from ptxpy.transpiler.abi import CompiledKernel, ParamSpec


def _has_gpu() -> bool:
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(not _has_gpu(), reason="no CUDA GPU visible to JAX")


# --- hand-written kernels --------------------------------------------------------------------

REGS = """    .reg .pred %p<4>;
    .reg .b16 %rs<8>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .reg .f32 %f<16>;
    .reg .f64 %fd<4>;"""

GID = """    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    ld.param.u32 %r5, [K_x_shape0];
    setp.ge.u32 %p1, %r4, %r5;
    @%p1 bra $DONE;
    mul.wide.u32 %rd1, %r4, 4;"""


def element(param: str, reg: str, ptr: str, store: bool = False) -> str:
    """Load (or store) element gid of f32 array `param` through pointer register `ptr`."""
    op = f"st.global.f32 [{ptr}], {reg};" if store else f"ld.global.f32 {reg}, [{ptr}];"
    return f"""    ld.param.u64 {ptr}, [K_{param}];
    cvta.to.global.u64 {ptr}, {ptr};
    add.s64 {ptr}, {ptr}, %rd1;
    {op}"""


def kernel(name: str, params: list[ParamSpec], body: str, module_extra: str = "",
           **fields) -> CompiledKernel:
    decl = ",\n".join(f"    .param .{t} {n}" for p in params for n, t in p.ptx_params(name))
    ptx = (f".version 7.8\n.target sm_90\n.address_size 64\n{module_extra}\n"
           f".visible .entry {name}(\n{decl}\n)\n{{\n{REGS}\n{body.replace('K_', name + '_')}\n}}\n")
    return CompiledKernel(name=name, ptx=ptx, params=params, **fields)


def arr(name, dtype=T.f32, rank=1, written=False):
    return ParamSpec(name, "array", dtype, rank, written=written)


def scalar(name, dtype=T.f32, by_ref=False):
    return ParamSpec(name, "scalar", dtype, by_ref=by_ref)


SAXPY = kernel("saxpy", [arr("x"), arr("y"), scalar("a"), arr("out", written=True)], f"""{GID}
{element("x", "%f1", "%rd2")}
{element("y", "%f2", "%rd3")}
    ld.param.f32 %f3, [K_a];
    fma.rn.f32 %f4, %f3, %f1, %f2;
{element("out", "%f4", "%rd4", store=True)}
$DONE:
    ret;""")

ADDSUB = kernel("addsub", [arr("x"), arr("y"), arr("s", written=True), arr("d", written=True)],
                f"""{GID}
{element("x", "%f1", "%rd2")}
{element("y", "%f2", "%rd3")}
    add.rn.f32 %f3, %f1, %f2;
    sub.rn.f32 %f4, %f1, %f2;
{element("s", "%f3", "%rd4", store=True)}
{element("d", "%f4", "%rd5", store=True)}
$DONE:
    ret;""")

SCALE_REF = kernel("scale_ref", [arr("x"), scalar("a", by_ref=True), arr("out", written=True)],
                   f"""{GID}
{element("x", "%f1", "%rd2")}
    ld.param.u64 %rd5, [K_a];
    cvta.to.global.u64 %rd5, %rd5;
    ld.global.f32 %f3, [%rd5];
    mul.rn.f32 %f4, %f3, %f1;
{element("out", "%f4", "%rd4", store=True)}
$DONE:
    ret;""")

ADD1_BODY = f"""{GID}
{element("x", "%f1", "%rd2")}
    add.rn.f32 %f2, %f1, 0f3F800000;
{element("out", "%f2", "%rd3", store=True)}
$DONE:
    ret;"""
ADD1 = kernel("add1", [arr("x"), arr("out", written=True)], ADD1_BODY)

# bool, i16, f64, f16 scalars: offsets 0, 2, 8, 16, then out at 24 and its extent at 32.
SCALARS = kernel("scalars", [scalar("flag", T.bool_), scalar("s", T.i16), scalar("d", T.f64),
                             scalar("h", T.f16), arr("out", written=True)], """
    ld.param.u8 %rs1, [K_flag];
    cvt.rn.f32.u16 %f1, %rs1;
    ld.param.s16 %rs2, [K_s];
    cvt.rn.f32.s16 %f2, %rs2;
    ld.param.f64 %fd1, [K_d];
    cvt.rn.f32.f64 %f3, %fd1;
    ld.param.b16 %rs3, [K_h];
    cvt.f32.f16 %f4, %rs3;
    ld.param.u64 %rd1, [K_out];
    cvta.to.global.u64 %rd1, %rd1;
    st.global.f32 [%rd1], %f1;
    st.global.f32 [%rd1+4], %f2;
    st.global.f32 [%rd1+8], %f3;
    st.global.f32 [%rd1+12], %f4;
    ret;""")

DYN = 68 * 1024  # dynamic shared bytes, over the 48 KB default


def _reverse_in_block() -> CompiledKernel:
    """out[b*B + t] = x[b*B + B-1-t], through the top end of a 68 KB dynamic shared buffer."""
    body = f"""{GID}
{element("x", "%f1", "%rd2")}
    mov.u32 %r6, dsmem;
    shl.b32 %r7, %r3, 2;
    mov.u32 %r8, {DYN - 4};
    sub.s32 %r8, %r8, %r7;
    add.s32 %r8, %r8, %r6;
    st.shared.f32 [%r8], %f1;
    bar.sync 0;
    shl.b32 %r10, %r2, 2;
    mov.u32 %r11, {DYN};
    sub.s32 %r11, %r11, %r10;
    add.s32 %r11, %r11, %r7;
    add.s32 %r11, %r11, %r6;
    ld.shared.f32 %f2, [%r11];
{element("out", "%f2", "%rd3", store=True)}
$DONE:
    ret;"""
    return kernel("reverse_block", [arr("x"), arr("out", written=True)], body,
                  module_extra=".extern .shared .align 16 .b8 dsmem[];",
                  options={"dynamic_shared_bytes": DYN})


REVERSE = _reverse_in_block()


def f32(shape):
    return jax.ShapeDtypeStruct(shape, jnp.float32)


def grid_for(n, block=128):
    return ((n + block - 1) // block, 1, 1)


def rand(n, seed):
    return jnp.asarray(np.random.default_rng(seed).standard_normal(n).astype(np.float32))


def close(actual, expected):
    """float32 results against a float64 reference (fma rounds once where NumPy rounds twice)."""
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64),
                               rtol=1e-6, atol=1e-6)


def f64(x):
    return np.asarray(x, np.float64)


# --- cache (CPU) -----------------------------------------------------------------------------

@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXPY_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("PTXPY_CACHE", raising=False)
    cache.clear_memory()
    yield tmp_path / "c"
    cache.clear_memory()


def test_cache_dir_defaults_to_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("PTXPY_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "ptxpy"
    monkeypatch.setenv("PTXPY_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert cache.cache_dir() == tmp_path / "elsewhere"


def test_cache_key_is_stable_and_sensitive():
    parts = {"source": "def k(): pass", "arch": "sm_90", "options": {"debug": False}}
    assert cache.cache_key(parts) == cache.cache_key(dict(reversed(list(parts.items()))))
    for change in ({"arch": "sm_80"}, {"source": "def k(): return"}, {"options": {"debug": True}}):
        assert cache.cache_key({**parts, **change}) != cache.cache_key(parts)


def test_cache_key_includes_compiler_version(monkeypatch):
    before = cache.cache_key({"a": 1})
    monkeypatch.setattr(cache, "__version__", "999.0")
    assert cache.cache_key({"a": 1}) != before


def test_get_or_compile_memory_then_disk(cache_dir):
    calls = []

    def compile_fn():
        calls.append(1)
        return "// ptx\n"

    parts = {"source": "x", "arch": "sm_90"}
    assert cache.get_or_compile(parts, compile_fn) == "// ptx\n"
    assert cache.get_or_compile(parts, compile_fn) == "// ptx\n"
    assert len(calls) == 1
    cache.clear_memory()
    assert cache.get_or_compile(parts, compile_fn) == "// ptx\n"
    assert len(calls) == 1, "the second process-level lookup must come from disk"
    path = cache.entry_path("ptx", parts)
    assert path.exists() and path.parent.parent == cache_dir
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "payload"])
def test_corrupt_entry_is_recomputed(cache_dir, damage):
    parts = {"source": "y"}
    cache.get_or_compile(parts, lambda: "good ptx")
    path = cache.entry_path("ptx", parts)
    data = path.read_bytes()
    path.write_bytes({"truncate": data[:-3], "garbage": b"\x00\xff" * 10, "empty": b"",
                      "payload": data.replace(b"good", b"evil")}[damage])
    cache.clear_memory()
    assert cache.get_or_compile(parts, lambda: "good ptx") == "good ptx"
    assert path.read_bytes() == data


def _fake_ptxas(directory, version: str) -> str:
    """A script that answers `--version` as ptxas `version` ("13.5.37") does."""
    major, minor, _ = version.split(".")
    path = directory / f"ptxas-{version}"
    path.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {major}.{minor}, V{version}'\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def installed(monkeypatch, tmp_path, cache_dir):
    """Four fake ptxas installed: 13.0.88, 13.5.37, 12.8.0 and 14.0.0."""
    from ptxpy.runtime import compiler

    fakes = {v: _fake_ptxas(tmp_path, v) for v in ("13.0.88", "13.5.37", "12.8.0", "14.0.0")}
    monkeypatch.setattr(compiler, "installed_ptxas", lambda: list(fakes.values()))
    monkeypatch.setenv("PTXPY_PTXAS", "newest")
    return fakes


@pytest.mark.parametrize("driver_version, chosen", [
    (13000, "13.5.37"),     # driver 580: its JIT is 13.0, which builds programs 748 and 767 wrong
    (13020, "13.5.37"),
    (13050, None),          # nothing newer than the driver of the same major version
    (13060, None),
    (12060, "12.8.0"),
    (12080, None),
    (14000, None),          # 14.0 is not newer than the driver's own 14.0
    (11080, None),
])
def test_ptxpy_ptxas_newest_takes_the_newest_ptxas_of_the_drivers_major_version(
        installed, driver_version, chosen):
    from ptxpy.runtime import compiler

    ptxas = compiler.chosen_ptxas(driver_version)
    assert (ptxas and ptxas.path) == (chosen and installed[chosen])
    if chosen:
        assert str(ptxas) == f"ptxas {chosen}"


def test_ptxpy_ptxas_names_the_compiler_or_the_drivers_jit(installed, monkeypatch):
    from ptxpy.runtime import compiler

    monkeypatch.setenv("PTXPY_PTXAS", "driver")
    assert compiler.chosen_ptxas(13000) is None
    monkeypatch.delenv("PTXPY_PTXAS")                             # the default: the driver's
    assert compiler.chosen_ptxas(13000) is None
    monkeypatch.setenv("PTXPY_PTXAS", installed["13.0.88"])      # named: used, even if older
    assert compiler.chosen_ptxas(13050).path == installed["13.0.88"]
    monkeypatch.setenv("PTXPY_PTXAS", installed["14.0.0"])       # another major version: not
    assert compiler.chosen_ptxas(13000) is None


def test_ptxas_target_arch():
    from ptxpy.runtime import compiler

    assert compiler.target_arch(".version 8.0\n.target sm_90a\n", 90) == "sm_90a"
    assert compiler.target_arch(".version 7.8\n.target sm_80\n", 90) == "sm_90"
    assert compiler.target_arch(".version 7.8\n.target sm_90\n", 100) == "sm_100"


def test_assemble_makes_a_cubin_or_says_what_ptxas_said():
    from ptxpy.runtime import compiler
    from ptxpy.transpiler.ptxas import find_ptxas, ptxas_version

    path = find_ptxas()
    if path is None:
        pytest.skip("no ptxas")
    ptxas = compiler.Ptxas(path, ptxas_version(path))
    assert compiler.assemble(ptxas, SAXPY.ptx, 90)[:4] == b"\x7fELF"
    with pytest.raises(compiler.PtxasError, match=r"^ptxas \d+\.\d+\.\d+ \(-arch=sm_90\): .*error"):
        compiler.assemble(ptxas, SAXPY.ptx.replace("fma.rn.f32", "fma.rn.f33"), 90)


def test_the_cubins_cache_key_names_the_compiler(monkeypatch, installed):
    """A cubin from the driver's JIT is never taken for one from a newer ptxas, nor one
    ptxas's for another's."""
    keys = []
    monkeypatch.setattr(driver, "device_limits", lambda ordinal: type("L", (), {"arch": 90}))
    monkeypatch.setattr(driver, "driver_version", lambda: 13000)
    monkeypatch.setattr(driver.cache, "get_or_compile_cubin", lambda key, make: keys.append(key))
    image = driver.KernelImage("saxpy", SAXPY.ptx)
    image.cubin(0)
    monkeypatch.delenv("PTXPY_PTXAS")
    image.cubin(0)
    assert [k["compiler"] for k in keys] == ["ptxas 13.5.37", "driver"]


def test_cache_disabled(cache_dir, monkeypatch):
    monkeypatch.setenv("PTXPY_CACHE", "0")
    calls = []
    cache.get_or_compile({"s": 1}, lambda: calls.append(1) or "p")
    cache.clear_memory()
    cache.get_or_compile({"s": 1}, lambda: calls.append(1) or "p")
    assert len(calls) == 2
    assert not cache_dir.exists()


def test_cubin_variant_round_trips_bytes(cache_dir):
    blob = bytes(range(256)) * 3
    assert cache.get_or_compile_cubin({"k": 1}, lambda: blob) == blob
    cache.clear_memory()
    assert cache.get_or_compile_cubin({"k": 1}, lambda: b"other") == blob


def test_unwritable_cache_still_compiles(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("PTXPY_CACHE_DIR", str(blocker / "sub"))
    cache.clear_memory()
    assert cache.get_or_compile({"z": 1}, lambda: "ptx") == "ptx"


_WRITER = """
import sys
from ptxpy.runtime import cache
out = cache.get_or_compile({"shared": "key"}, lambda: "X" * 200000)
assert out == "X" * 200000
"""


_KERNEL_FILE = """
import ptxpy
from ptxpy import Array, f32

@ptxpy.jit(out_shape=lambda x: x, grid=1, block=32)
def scale(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = SCALE * x[i]
"""

_KERNEL_USER = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import kernels
import ptxpy.runtime.simulator  # what running it needs; the compiler must stay unloaded
ptx = kernels.scale.ptx(np.zeros(4, np.float32))
out = np.asarray(kernels.scale(np.arange(4, dtype=np.float32)))
print(json.dumps({"ptx": ptx, "out": out.tolist(),
                  "compiler": sorted(m for m in sys.modules
                                     if m == "libcst" or m.startswith("ptxpy.transpiler.front"))}))
"""


def _run_kernel_user(folder, cache_dir, scale: str) -> dict:
    import json

    (folder / "kernels.py").write_text(_KERNEL_FILE.replace("SCALE", scale))
    env = dict(os.environ, PTXPY_CACHE_DIR=str(cache_dir), PTXPY_PRELOAD="0", PTXPY_INTERPRET="1",
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", _KERNEL_USER, str(folder)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_warm_start_takes_kernels_from_disk_without_the_compiler(cache_dir, tmp_path):
    first = _run_kernel_user(tmp_path, cache_dir, "2.0")
    assert first["compiler"], "a cold start compiles, so it loads the compiler"
    assert first["out"] == [0.0, 2.0, 4.0, 6.0]
    warm = _run_kernel_user(tmp_path, cache_dir, "2.0")
    assert warm["compiler"] == [], "a warm start must not import the compiler"
    assert warm["ptx"] == first["ptx"] and warm["out"] == first["out"]
    changed = _run_kernel_user(tmp_path, cache_dir, "3.0")
    assert changed["compiler"], "an edited file must be compiled again"
    assert changed["out"] == [0.0, 3.0, 6.0, 9.0]


_PRELOAD_PROBE = """
import ast, json, sys, threading
sys.path.insert(0, sys.argv[1])
from ptxpy import api
from ptxpy.transpiler import pyast
api._gpu_driver_present = lambda: sys.argv[2] == "driver"   # as on a machine with (without) one
pyast.THREAD_SAFE = sys.argv[3] == "safe"   # as on a Python that can (cannot) parse on threads
parsed_on = set()
python_parse = ast.parse
def recorded_parse(*args, **kwargs):
    parsed_on.add(threading.current_thread().name)
    return python_parse(*args, **kwargs)
ast.parse = recorded_parse
import kernels
threads = dict(api._preloads)
for thread in threads.values():
    thread.join()
import later   # a kernel decorated after the preload has finished starts another
for thread in api._preloads.values():
    thread.join()
native = sys.modules.get("ptxpy.runtime.native")
print(json.dumps({"started": sorted(threads), "runtime": "ptxpy.runtime.launch" in sys.modules,
                  "compiler": "libcst" in sys.modules, "parsed": kernels.scale._program is not None,
                  "later": later.scale._program is not None,
                  "handler": native is not None and native._library is not None,
                  "parsed_on": sorted(parsed_on)}))
"""


def _preloaded(folder, cache_dir, driver="driver", python="safe", **settings) -> dict:
    import json

    (folder / "kernels.py").write_text(_KERNEL_FILE.replace("SCALE", "2.0"))
    (folder / "later.py").write_text(_KERNEL_FILE.replace("SCALE", "3.0"))
    env = {k: v for k, v in os.environ.items() if k not in ("PTXPY_PRELOAD", "PTXPY_INTERPRET")}
    env.update(PTXPY_CACHE_DIR=str(cache_dir), JAX_PLATFORMS="cpu", **settings)
    proc = subprocess.run([sys.executable, "-c", _PRELOAD_PROBE, str(folder), driver, python],
                          env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_decorating_a_kernel_preloads_the_compiler_and_the_runtime(cache_dir, tmp_path):
    from ptxpy.runtime import native

    both = _preloaded(tmp_path, cache_dir)
    assert both["started"] == ["compiler", "runtime"]
    assert both["compiler"] and both["runtime"]
    assert both["parsed"] and both["later"]   # the kernels' files, as their first calls would
    assert both["handler"] == (native.compiler() is not None)   # built in the background
    without_driver = _preloaded(tmp_path, cache_dir, driver="none")
    assert without_driver["started"] == ["compiler", "runtime"] and not without_driver["runtime"]
    assert _preloaded(tmp_path, cache_dir, PTXPY_PRELOAD="0") == {
        "started": [], "runtime": False, "compiler": False, "parsed": False, "handler": False,
        "later": False, "parsed_on": []}
    simulated = _preloaded(tmp_path, cache_dir, PTXPY_INTERPRET="1")
    assert simulated["started"] == ["compiler"] and not simulated["runtime"]


def test_where_python_cannot_parse_on_two_threads_the_preload_parses_nothing(cache_dir, tmp_path):
    """CPython 3.11.0-3.11.7 and 3.12.0-3.12.1 (gh-106905): a parse on the preload's thread could
    make one on the main thread, such as pytest's of a test file, fail with a SystemError."""
    unsafe = _preloaded(tmp_path, cache_dir, python="unsafe")
    assert unsafe["started"] == ["compiler", "runtime"]
    assert unsafe["compiler"] and unsafe["runtime"]      # still imported in the background
    assert not unsafe["parsed"] and not unsafe["later"]  # the files wait for the first calls
    assert unsafe["parsed_on"] == []
    safe = _preloaded(tmp_path, cache_dir, python="safe")
    assert safe["parsed_on"] == ["ptxpy-preload-compiler"]


@pytest.mark.parametrize("call_began", [False, True])
def test_the_preload_skips_its_warm_up_compile_once_a_call_compiles(monkeypatch, call_began):
    """The preload's warm-up compile only warms the compiler: once a call has needed the
    compiler (it waited for the preload's imports), it would take the GIL from that call."""
    from ptxpy import api
    from ptxpy.transpiler import driver as transpiler_driver

    compiled, imported = [], []
    monkeypatch.setattr(api, "_warmed_up", False)
    monkeypatch.setattr(api, "_calls_compiling", call_began)
    monkeypatch.setattr(api, "_unread", [])
    monkeypatch.setattr(api.pyast, "THREAD_SAFE", True)
    monkeypatch.setattr(transpiler_driver, "import_stages", lambda: imported.append(True))
    monkeypatch.setattr(transpiler_driver, "transpile",
                        lambda source, filename: compiled.append(filename))
    api._load_compiler()
    assert imported == [True]
    assert compiled == ([] if call_began else ["<ptxpy preload>"])


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=1)
def _first_of(x: ptxpy.Array[ptxpy.f32], out: ptxpy.Array[ptxpy.f32]):
    out[0] = x[0]


def test_a_kernel_read_by_a_call_not_by_the_preload_counts_as_a_call_compiling(monkeypatch):
    from ptxpy import api

    monkeypatch.setenv("PTXPY_PRELOAD", "0")     # (no preload of these two here)
    monkeypatch.setattr(api, "_calls_compiling", False)
    on_preload = ptxpy.jit(_first_of.fn)
    thread = threading.Thread(target=lambda: on_preload.program, name="ptxpy-preload-compiler")
    thread.start()
    thread.join()
    assert on_preload._program is not None and api._calls_compiling is False
    ptxpy.jit(_first_of.fn).program
    assert api._calls_compiling is True


def test_a_kernel_found_in_the_disk_cache_preloads_its_executables(monkeypatch):
    from ptxpy import api

    started = []
    monkeypatch.setattr(api, "_preload", lambda part, kernel=None: started.append((part, kernel)))
    monkeypatch.delenv("PTXPY_INTERPRET", raising=False)
    monkeypatch.setattr(api.Kernel, "_compiled_before", lambda self: True)
    warm = ptxpy.jit(_first_of.fn)
    assert started == [("runtime", None), ("executables", warm)]
    started.clear()
    ptxpy.jit(_first_of.fn, interpret=True)     # never on the GPU
    assert started == []
    monkeypatch.setattr(api.Kernel, "_compiled_before", lambda self: False)
    cold = ptxpy.jit(_first_of.fn)
    assert started == [("compiler", cold), ("runtime", None)]
    assert warm._owner() == f"{os.path.abspath(__file__)}:_first_of"


class _Backend:
    def __init__(self, platform):
        self.platform = platform


@pytest.mark.parametrize("backends, loaded", [
    ({}, False),                                    # the program never sets up JAX
    ({"cpu": _Backend("cpu")}, False),              # JAX without its GPU
    ({"cpu": _Backend("cpu"), "cuda": _Backend("cuda")}, True)])
def test_the_executables_preload_waits_for_the_programs_gpu(monkeypatch, backends, loaded):
    from ptxpy import api
    from ptxpy.runtime import executables

    owners, registered = [], []
    monkeypatch.setattr(api, "_gpu_driver_present", lambda: True)
    monkeypatch.setattr(api, "_GPU_WAIT_S", 0.05)
    monkeypatch.setattr(api, "_warm", [_first_of, _first_of])
    monkeypatch.setattr(executables, "started_backends", lambda: backends)
    monkeypatch.setattr(executables, "prefetch", owners.append)
    monkeypatch.setattr(ffi, "register_target", lambda: registered.append(True))
    api._load_executables()
    assert owners == ([_first_of._owner()] * 2 if loaded else [])
    assert registered == ([True] if loaded else [])    # the FFI handler before the loads


def test_started_backends_sets_none_up():
    probe = ("import jax, jax.numpy as jnp\n"
             "from ptxpy.runtime import executables\n"
             "print(sorted(executables.started_backends()), sorted(executables.started_backends()))\n"
             "jnp.ones(1)\n"
             "print(sorted(executables.started_backends()))\n")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[] []", "['cpu']"]


def test_only_the_main_thread_switches_the_collector_around_a_compile():
    """A compile on another thread (the decorator's preload) leaves Python's collector alone, so
    it never switches it back on after the program switched it off meanwhile."""
    import gc

    from ptxpy.transpiler import driver as transpiler_driver

    seen = []

    def compile_on_a_thread(program_turns_it_off: bool):
        with transpiler_driver._GcPaused():
            seen.append(gc.isenabled())
            if program_turns_it_off:
                gc.disable()

    was_enabled = gc.isenabled()
    try:
        gc.enable()
        with transpiler_driver._GcPaused():
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())
        for turns_off in (False, True):
            thread = threading.Thread(target=compile_on_a_thread, args=(turns_off,))
            thread.start()
            thread.join()
            seen.append(gc.isenabled())
    finally:
        (gc.enable if was_enabled else gc.disable)()
    assert seen == [False, True, True, True, True, False]


@pytest.mark.parametrize("version, safe", [
    ((3, 10, 14), True), ((3, 11, 0), False), ((3, 11, 7, "final", 0), False), ((3, 11, 8), True),
    ((3, 12, 0), False), ((3, 12, 1), False), ((3, 12, 2), True), ((3, 13, 0), True)])
def test_pythons_that_parse_safely_on_two_threads(version, safe):
    from ptxpy.transpiler import pyast

    assert pyast.thread_safe(version) is safe


def test_the_compilers_parses_take_turns_where_python_needs_it(monkeypatch):
    from ptxpy.transpiler import pyast

    def parse_on_a_thread() -> threading.Event:
        done = threading.Event()
        threading.Thread(target=lambda: (pyast.parse("x = 1"), done.set()), daemon=True).start()
        return done

    monkeypatch.setattr(pyast, "THREAD_SAFE", False)
    with pyast._lock:               # as another thread's parse holds it
        done = parse_on_a_thread()
        assert not done.wait(0.2)
    assert done.wait(10)
    monkeypatch.setattr(pyast, "THREAD_SAFE", True)
    with pyast._lock:
        assert parse_on_a_thread().wait(10)


def test_compiler_fingerprint_follows_the_compiler_files():
    from ptxpy.transpiler import driver as transpiler_driver

    path = transpiler_driver.__file__
    before = cache.compiler_fingerprint.__wrapped__()
    stat = os.stat(path)
    try:
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        assert cache.compiler_fingerprint.__wrapped__() != before
    finally:
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert cache.compiler_fingerprint.__wrapped__() == before


def test_corrupt_kernel_entry_is_compiled_again(cache_dir):
    parts = {"kernel": "k"}
    cache.get_or_make_object("kernel", parts, lambda: {"ptx": "good"})
    path = cache.entry_path("kernel", parts)
    data = path.read_bytes()
    header, _, payload = data.partition(b"\n")
    path.write_bytes(cache._header(b"not a pickle") + b"\nnot a pickle")
    cache.clear_memory()
    assert cache.get_or_make_object("kernel", parts, lambda: {"ptx": "good"}) == {"ptx": "good"}
    assert path.read_bytes() == data


def test_cache_is_safe_across_processes(cache_dir):
    env = dict(os.environ, PTXPY_CACHE_DIR=str(cache_dir), JAX_PLATFORMS="cpu")
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER], env=env) for _ in range(6)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    cache.clear_memory()
    assert cache.get_or_compile({"shared": "key"}, lambda: "wrong") == "X" * 200000
    assert not [p for p in cache.entry_path("ptx", {"shared": "key"}).parent.iterdir()
                if p.name.endswith(".tmp")]


# --- argument checking (CPU: fails before any CUDA call) -------------------------------------

@pytest.fixture
def no_cuda(monkeypatch):
    def forbidden(*a, **k):
        raise AssertionError("a CUDA call was made before the arguments were checked")

    monkeypatch.setattr(launch_mod, "_prepare_devices", forbidden)


X4, Y4 = np.ones(4, np.float32), np.ones(4, np.float32)


@pytest.mark.parametrize("args, out_types, error, words", [
    ([X4, Y4], [f32((4,))], TypeError, ["saxpy", "3 arguments", "x, y, a"]),
    ([X4.astype(np.float64), Y4, 2.0], [f32((4,))], TypeError, ["saxpy", "'x'", "f32", "float64"]),
    ([X4.reshape(2, 2), Y4, 2.0], [f32((4,))], ValueError, ["saxpy", "'x'", "rank 1"]),
    ([X4, 3.0, 2.0], [f32((4,))], TypeError, ["saxpy", "'y'", "array"]),
    ([X4, Y4, "two"], [f32((4,))], TypeError, ["saxpy", "'a'"]),
    ([X4, Y4, 2.0], [jax.ShapeDtypeStruct((4,), jnp.int32)], TypeError, ["saxpy", "'out'", "int32"]),
    ([X4, Y4, 2.0], [f32((2, 2))], ValueError, ["saxpy", "'out'", "rank"]),
    ([X4, Y4, 2.0], [f32((4,)), f32((4,))], TypeError, ["saxpy", "2 arguments"]),
    ([f32((4,)), Y4, 2.0], [f32((4,))], TypeError, ["saxpy", "'x'", "got ShapeDtypeStruct"]),
    ([X4.astype(">f4"), Y4, 2.0], [f32((4,))], TypeError, ["saxpy", "'x'", "big-endian"]),
    ([X4, Y4, 2.0], [f32((-4,))], ValueError, ["saxpy", "'out'", "cannot be negative", "(-4,)"]),
])
def test_bad_arguments(no_cuda, args, out_types, error, words):
    with pytest.raises(error) as info:
        launch(SAXPY, args, out_types, (1, 1, 1), (4, 1, 1))
    for w in words:
        assert w in str(info.value)


def test_integer_scalar_checks(no_cuda):
    k = kernel("iscale", [arr("x"), scalar("n", T.i16), arr("out")], "ret;")
    with pytest.raises(ValueError, match="'n'.*does not fit in i16"):
        launch(k, [X4, 70000], [f32((4,))], 1, 4)
    with pytest.raises(TypeError, match="'n'.*integer"):
        launch(k, [X4, 2.5], [f32((4,))], 1, 4)


@pytest.mark.parametrize("dtype", [T.bool_, T.i8, T.i16, T.i32, T.i64, T.u8, T.u16, T.u32, T.u64],
                         ids=str)
def test_every_integer_width_checks_scalars_as_i32_does(dtype):
    k = kernel("iscale", [arr("x"), scalar("n", dtype), arr("out")], "ret;")
    for given in (1, 1.0, True, np.float32(1), np.int64(1), ml_dtypes.bfloat16(1)):
        _, value = launch_mod.check_args(k, k.params[:2], [X4, given])
        assert value.dtype == dtype.numpy and value == 1, given
    with pytest.raises(TypeError, match=rf"'n': expected an integer \({dtype}\), got 1.5"):
        launch_mod.check_args(k, k.params[:2], [X4, 1.5])
    above = 2 if dtype is T.bool_ else int(np.iinfo(dtype.numpy).max) + 1
    for given in (above, float(above)):
        with pytest.raises(ValueError, match=re.escape(f"'n': {given!r} does not fit in {dtype}")):
            launch_mod.check_args(k, k.params[:2], [X4, given])


@pytest.mark.parametrize("dtype", [T.f16, T.bf16, T.f32, T.f64], ids=str)
@pytest.mark.parametrize("given", [0.5, np.float16(0.5), ml_dtypes.bfloat16(0.5),
                                   ml_dtypes.float8_e4m3fn(0.5), jnp.bfloat16(0.5)])
def test_float_scalars_are_converted_to_the_parameters_type(dtype, given):
    k = kernel("fscale", [arr("x"), scalar("s", dtype), arr("out")], "ret;")
    _, value = launch_mod.check_args(k, k.params[:2], [X4, given])
    assert value.dtype == dtype.numpy and float(value) == 0.5


@pytest.mark.parametrize("dtype, given, expected", [
    (T.f32, 2**70 + 2**46 + 1, 2.0**70 + 2.0**47),   # through an f64 it would round to 2**70
    (T.f32, 2**70 + 2**46, 2.0**70),                  # a tie: to even
    (T.f32, -(2**64), -(2.0**64)), (T.f64, 2**64 + 1, 2.0**64), (T.bf16, 2**80 + 1, 2.0**80),
    (T.f16, 65519, 65504.0), (T.f16, 65520, np.inf), (T.f16, 10**400, np.inf),
    (T.f32, -(10**400), -np.inf), (T.f16, 1e6, np.inf), (T.f16, np.float32(-1e6), -np.inf),
    # just above a tie of bf16: through f32 (ml_dtypes' float64 -> bfloat16) it rounds to even
    (T.bf16, 1 + 2**-8 + 2**-40, 1 + 2**-7), (T.bf16, np.float64(-(1 + 2**-8 + 2**-40)), -(1 + 2**-7)),
], ids=lambda v: str(v)[:12])
def test_float_scalars_of_any_size_are_rounded_once_as_a_cast_rounds(dtype, given, expected):
    """Python ints beyond 64 bits too, and overflow to an infinity without NumPy's warning."""
    k = kernel("fscale", [arr("x"), scalar("s", dtype), arr("out")], "ret;")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, value = launch_mod.check_args(k, k.params[:2], [X4, given])
    assert value.dtype == dtype.numpy and float(value) == expected


def test_differentiating_a_launch_names_the_kernel(no_cuda, monkeypatch):
    """On the GPU path as in the simulator (JAX alone would say that an FFI call cannot be
    differentiated). The rule refuses while tracing: nothing is registered or launched."""
    monkeypatch.setattr(launch_mod, "register", lambda *args: 0)
    with pytest.raises(TypeError, match=r"^ptxpy kernel 'saxpy' has no derivative rule, .*"
                                        r"jax.custom_vjp"):
        jax.grad(lambda x: launch(SAXPY, [x, Y4, 2.0], [f32((4,))], 1, 4)[0].sum())(X4)


@pytest.mark.parametrize("grid, block, error, words", [
    ((1, 1, 1), (2048, 1, 1), ValueError, ["2048 threads", "1024"]),
    ((1, 1, 1), (1, 1, 128), ValueError, ["block dimension z", "64"]),
    ((1, 70000, 1), (32, 1, 1), ValueError, ["grid dimension y", "65535"]),
    ((0, 1, 1), 32, ValueError, [">= 1"]),
    ((1, 2, 3, 4), 32, TypeError, ["tuple of 1 to 3"]),
    ((1.5,), 32, TypeError, ["grid"]),
])
def test_bad_launch_dimensions(no_cuda, grid, block, error, words):
    with pytest.raises(error) as info:
        launch(SAXPY, [X4, Y4, 2.0], [f32((4,))], grid, block)
    assert "saxpy" in str(info.value)
    for w in words:
        assert w in str(info.value)


@pytest.mark.parametrize("aliases, words", [
    ({2: 0}, ["key 2", "array argument"]),
    ({0: 1}, ["value 1", "output index"]),
    ({0: 0, 1: 0}, ["same output"]),
])
def test_bad_aliases(no_cuda, aliases, words):
    with pytest.raises(ValueError) as info:
        launch(SAXPY, [X4, Y4, 2.0], [f32((4,))], 1, 4, input_output_aliases=aliases)
    for w in words:
        assert w in str(info.value)


def test_alias_shape_mismatch(no_cuda):
    with pytest.raises(ValueError, match="'x' \\(8,\\) float32 cannot alias output 0 \\(4,\\)"):
        launch(SAXPY, [np.ones(8, np.float32), Y4, 2.0], [f32((4,))], 1, 4,
               input_output_aliases={0: 0})


def test_traced_scalar_by_value_is_rejected(no_cuda):
    def f(a):
        return launch(SAXPY, [X4, Y4, a], [f32((4,))], 1, 4)

    with pytest.raises(TypeError, match="'a'.*traced.*by_ref"):
        jax.jit(f)(2.0)


def test_param_layout_follows_abi():
    values = launch_mod.check_args(SCALARS, SCALARS.params[:4], [True, -7, 2.5, 0.5])
    ops, slots, params, offsets = launch_mod.pack(SCALARS, SCALARS.params[:4], values,
                                                  SCALARS.params[4:], [f32((4,))])
    assert ops == [] and offsets == [0, 2, 8, 16, 24, 32] and slots == [(24, 0)]
    assert params[0] == 1 and params[2:4] == np.int16(-7).tobytes()
    assert params[8:16] == np.float64(2.5).tobytes() and params[16:18] == np.float16(0.5).tobytes()
    assert params[32:36] == (4).to_bytes(4, "little")


def test_outputs_are_the_last_array_params():
    k = kernel("tail", [arr("x"), arr("out"), scalar("n", T.i32)], "ret;")
    inputs, outputs = launch_mod.split_params(k, 1)
    assert [p.name for p in inputs] == ["x", "n"] and [p.name for p in outputs] == ["out"]
    with pytest.raises(ValueError, match="3 outputs"):
        launch_mod.split_params(k, 3)


def test_no_gpu_message(monkeypatch):
    monkeypatch.setattr(jax, "local_devices", lambda backend=None: [])
    with pytest.raises(RuntimeError, match="no CUDA GPU.*simulator"):
        launch_mod.gpu_ordinals()


def test_cuda_error_names_call_and_kernel():
    e = driver.CudaError("cuModuleGetFunction", 500, "saxpy", 0)
    assert "cuModuleGetFunction" in str(e) and "'saxpy'" in str(e) and "device 0" in str(e)
    assert e.code == 500 and e.kernel == "saxpy"


# --- FFI plumbing (CPU: the same ctypes handler, registered for XLA's CPU backend) -----------

def _emulate_add1(plan, stream, pointers):
    """A stand-in for the GPU launch: out = x + 1 on host memory, n from the packed extent."""
    n = int.from_bytes(plan.params[8:12], "little")
    x = (ctypes.c_float * n).from_address(pointers[0])
    out = (ctypes.c_float * n).from_address(pointers[-1])
    for i in range(n):
        out[i] = x[i] + 1.0


@pytest.fixture
def cpu_add1():
    target = ffi.register_target("ptxpy_test_cpu", "cpu", _emulate_add1)
    on_cpu = jax.default_device(jax.devices("cpu")[0])
    on_cpu.__enter__()
    inputs, outputs = launch_mod.split_params(ADD1, 1)

    def call(x, aliases=None, pdl=False):
        values = launch_mod.check_args(ADD1, inputs, [x])
        outs = launch_mod.check_out_types(ADD1, outputs, [f32(x.shape)])
        ops, slots, params, offsets = launch_mod.pack(ADD1, inputs, values, outputs, outs)
        plan = ffi.LaunchPlan("add1", None, (1, 1, 1), (1, 1, 1), 0, params, offsets, slots,
                              pdl=pdl)
        key = ffi.register_plan(plan, ("cpu-add1", params, tuple(slots), pdl))
        return ffi.call(key, ops, outs, aliases, target=target)[0]

    yield call
    on_cpu.__exit__(None, None, None)


def test_ffi_eager_jit_vmap_on_cpu(cpu_add1):
    x = jnp.arange(6, dtype=jnp.float32)
    np.testing.assert_array_equal(cpu_add1(x), np.arange(6) + 1)
    np.testing.assert_array_equal(jax.jit(lambda v: cpu_add1(v * 2) * 3)(x), (np.arange(6) * 2 + 1) * 3)
    batch = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    np.testing.assert_array_equal(jax.vmap(cpu_add1)(batch), np.arange(12).reshape(3, 4) + 1)
    np.testing.assert_array_equal(jax.jit(lambda v: cpu_add1(v, {0: 0}))(x), np.arange(6) + 1)


def test_ffi_unknown_plan_is_an_error_on_cpu(cpu_add1):
    x = jax.device_put(jnp.ones(3, jnp.float32), jax.devices("cpu")[0])
    with pytest.raises(Exception, match="no ptxpy launch plan 12345"):
        jax.block_until_ready(ffi.call(12345, [x], [f32((3,))], target="ptxpy_test_cpu"))


def test_cpu_plan_with_pdl_attribute(cpu_add1):
    """A PDL plan's call carries a second attribute (uses_pdl); the handler still finds `plan`."""
    x = jnp.arange(5, dtype=jnp.float32)
    np.testing.assert_array_equal(jax.jit(lambda v: cpu_add1(v, pdl=True))(x), np.arange(5) + 1)


_WAITING = """.version 7.8
.target sm_90
.address_size 64

.visible .entry {name}(
    .param .u64 {name}_x
)
{{
    .reg .b64 %rd<2>;
    // a comment
    .loc 1 3 5
{first}
    ret;
}}
"""


@pytest.mark.parametrize("first,waits", [("    griddepcontrol.wait;", True),
                                         ("    ld.param.u64 %rd1, [k_x];", False),
                                         ("    griddepcontrol.launch_dependents;", False)])
def test_waits_for_predecessors(first, waits):
    ptx = _WAITING.format(name="k", first=first)
    assert launch_mod.waits_for_predecessors(ptx, "k") is waits
    assert not launch_mod.waits_for_predecessors(ptx, "other")


_ADD1_SOURCE = """import ptxpy
from ptxpy import Array, f32

@ptxpy.jit
def add1(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = x[i] + 1.0
"""


@pytest.mark.parametrize("arch,waits", [("sm_80", False), ("sm_90", True)])
def test_compiled_kernels_wait_from_sm90(arch, waits):
    ptx = ptxpy.transpile(_ADD1_SOURCE, arch=arch)["add1"]
    assert launch_mod.waits_for_predecessors(ptx, "add1") is waits


def test_kernel_args_are_the_packed_params():
    """The record stage hands XLA each parameter as a host value: address and size per slot."""
    params = bytes(range(20))
    plan = ffi.LaunchPlan("k", None, (1, 1, 1), (1, 1, 1), 0, params, [0, 8, 12], [(0, 0)])
    args = plan.kernel_args()
    assert args.num_args == 3
    base = ctypes.addressof(plan._buffer)
    got = [(args.args[i].arg_address - base, args.args[i].size, args.args[i].type) for i in range(3)]
    assert got == [(0, 8, 1), (8, 4, 1), (12, 8, 1)]
    plan.fill([0x1122334455667788])
    assert ctypes.string_at(args.args[0].arg_address, 8) == (0x1122334455667788).to_bytes(8, "little")


class _FakeRecordApi:
    """The record half of XLA's FFI, in Python: records what the handler asks of it."""

    def __init__(self):
        self.calls = []
        api = self.api = ffi.RecordApi()
        api.create_launch = ffi._CreateLaunch(self.create_launch)
        api.update_launch = ffi._UpdateLaunch(self.update_launch)
        api.request_stream_capture = ffi._RequestCapture(lambda ctx: self.calls.append("capture"))
        self.storage = (ctypes.c_void_p * 4)()
        self.count = ctypes.c_int64(0)

    def frame(self, action):
        return ffi.RecordFrame(None, ctypes.pointer(self.api), action, self.storage,
                               ctypes.pointer(self.count), 4)

    def _args(self, args):
        a = args.contents
        return [ctypes.string_at(a.args[i].arg_address, a.args[i].size) for i in range(a.num_args)]

    def create_launch(self, ctx, name, data, size, fmt, dims, shared, uses_pdl, args, deps, ndeps,
                      out):
        self.calls.append(("create", name, ctypes.string_at(data, size), fmt,
                           (dims.grid.x, dims.grid.y, dims.grid.z), (dims.block.x, dims.block.y),
                           shared, uses_pdl, self._args(args)))
        out[0] = 0xC0
        return None

    def update_launch(self, ctx, command, args):
        self.calls.append(("update", command, self._args(args)))
        return None


class _Image:
    name, digest = "k", "d"

    def cubin(self, ordinal):
        return b"CUBIN" + bytes([ordinal])


def test_record_stage_needs_an_api_with_find_extension():
    """ptxpy registers for the record stage only with an XLA FFI API long enough to hold
    XLA_FFI_InvokeContext_FindExtension (by its struct_size); older ones get the execute stage."""
    last = ffi._API_FIRST_FUNCTION + 8 * (ffi._API_FUNCTIONS.index("InvokeContext_FindExtension") + 1)
    for size, expected in ((last, True), (last - 8, False), (ffi._API_FIRST_FUNCTION + 40, False)):
        api = ctypes.create_string_buffer(last + 64)
        ctypes.c_size_t.from_buffer(api).value = size
        assert ffi._api_has(ctypes.addressof(api), "InvokeContext_FindExtension") is expected
    assert ffi._api_has(ctypes.addressof(api), "Stream_Get")


def test_record_stage_creates_then_updates_one_kernel_node(monkeypatch):
    monkeypatch.setattr(ffi._driver, "stream_context", lambda stream: "ctx")
    monkeypatch.setattr(ffi._driver, "ordinal_of_context", lambda ctx: 0)
    params = bytes(12)
    plan = ffi.LaunchPlan("k", _Image(), (3, 1, 1), (128, 1, 1), 0, params, [0, 8], [(0, 1)],
                          pdl=True)
    fake = _FakeRecordApi()
    assert not ffi.record_on_gpu(plan, fake.frame(ffi._RECORD_CREATE), lambda: 7, [0xA0, 0xB0])
    assert fake.count.value == 1 and fake.storage[0] == 0xC0
    assert fake.calls == [("create", b"k", b"CUBIN\0", ffi._SOURCE_CUBIN, (3, 1, 1), (128, 1),
                           0, 1, [(0xB0).to_bytes(8, "little"), bytes(4)])]
    assert not ffi.record_on_gpu(plan, fake.frame(1), lambda: 7, [0xA0, 0xD0])
    assert fake.calls[1] == ("update", 0xC0, [(0xD0).to_bytes(8, "little"), bytes(4)])
    with pytest.raises(ffi.HandlerError, match="did not pass back"):
        ffi.record_on_gpu(plan, _FakeRecordApi().frame(1), lambda: 7, [0xA0, 0xD0])
    big = ffi.LaunchPlan("k", _Image(), (1, 1, 1), (1, 1, 1), 64 * 1024, params, [0, 8], [])
    ffi.record_on_gpu(big, fake.frame(ffi._RECORD_CREATE), lambda: 7, [])
    assert fake.calls[2] == "capture" and fake.count.value == 1


# --- GPU -------------------------------------------------------------------------------------

def run_saxpy(x, y, a, aliases=None):
    n = x.shape[0]
    return launch(SAXPY, [x, y, a], [f32((n,))], grid_for(n), (128, 1, 1), aliases)[0]


@gpu
@needs_gpu
def test_eager_saxpy():
    x, y = rand(1000, 1), rand(1000, 2)
    close(run_saxpy(x, y, 2.5), 2.5 * f64(x) + f64(y))
    close(run_saxpy(x, y, -1.0), -f64(x) + f64(y))  # a new scalar value, a new plan
    close(run_saxpy(x, y, np.float32(0.5)), 0.5 * f64(x) + f64(y))
    close(run_saxpy(x, y, jnp.float32(3.0)), 3 * f64(x) + f64(y))  # a concrete 0-d array


@gpu
@needs_gpu
def test_jit_saxpy_static_scalar():
    x, y = rand(4097, 3), rand(4097, 4)
    out = jax.jit(lambda x, y: run_saxpy(x, y, -1.5))(x, y)
    close(out, -1.5 * f64(x) + f64(y))


@gpu
@needs_gpu
def test_two_kernels_and_xla_ops_in_one_jit():
    x, y = rand(3000, 5), rand(3000, 6)

    def f(x, y):
        a = run_saxpy(x, y, 2.0)
        b = jnp.sin(a)
        s, d = launch(ADDSUB, [b, y], [f32(b.shape)] * 2, grid_for(3000), 128)
        return jnp.sum(s * d) + run_saxpy(s, d, 0.5)[7]

    xn, yn = np.asarray(x, np.float64), np.asarray(y, np.float64)
    b = np.sin(2 * xn + yn)
    s, d = b + yn, b - yn
    np.testing.assert_allclose(jax.jit(f)(x, y), np.sum(s * d) + 0.5 * s[7] + d[7], rtol=1e-4)


@gpu
@needs_gpu
def test_multiple_outputs():
    x, y = rand(777, 7), rand(777, 8)
    s, d = launch(ADDSUB, [x, y], [f32((777,)), f32((777,))], grid_for(777), 128)
    np.testing.assert_allclose(s, np.asarray(x) + np.asarray(y), rtol=1e-6)
    np.testing.assert_allclose(d, np.asarray(x) - np.asarray(y), rtol=1e-6)


@gpu
@needs_gpu
def test_input_output_aliases_donate():
    x, y = rand(512, 9), rand(512, 10)
    expected = 3.0 * f64(x) + f64(y)
    f = jax.jit(lambda x, y: run_saxpy(x, y, 3.0, aliases={1: 0}), donate_argnums=1)
    out = f(x, y)
    close(out, expected)
    assert y.is_deleted()
    close(run_saxpy(x, out, 1.0, aliases={1: 0}), expected + f64(x))


@gpu
@needs_gpu
def test_scalar_by_reference_traced():
    traces = []

    def f(x, a):
        traces.append(1)
        return launch(SCALE_REF, [x, a], [f32(x.shape)], grid_for(x.shape[0]), 128)[0]

    x = rand(300, 11)
    jf = jax.jit(f)
    for a in (2.0, -0.25, 7.0):
        np.testing.assert_allclose(jf(x, a), a * np.asarray(x), rtol=1e-6)
    assert len(traces) == 1
    np.testing.assert_allclose(f(x, jnp.float32(4.0)), 4 * np.asarray(x), rtol=1e-6)
    np.testing.assert_allclose(f(x, 4), 4 * np.asarray(x), rtol=1e-6)


@gpu
@needs_gpu
def test_scalars_of_every_width():
    out = launch(SCALARS, [True, -7, 2.5, np.float16(0.5)], [f32((4,))], 1, 1)[0]
    np.testing.assert_array_equal(out, [1.0, -7.0, 2.5, 0.5])
    out = jax.jit(lambda: launch(SCALARS, [False, 300, -1e30, -2.0], [f32((4,))], 1, 1)[0])()
    np.testing.assert_array_equal(out, np.array([0.0, 300.0, -1e30, -2.0], np.float32))


@gpu
@needs_gpu
def test_vmap_runs_in_sequence():
    xs, ys = rand(4 * 256, 12).reshape(4, 256), rand(4 * 256, 13).reshape(4, 256)
    out = jax.vmap(lambda x, y: run_saxpy(x, y, 2.0))(xs, ys)
    close(out, 2 * f64(xs) + f64(ys))
    out = jax.jit(jax.vmap(lambda x: launch(SCALE_REF, [x, 3.0], [f32(x.shape)], 2, 128)[0]))(xs)
    np.testing.assert_allclose(out, 3 * np.asarray(xs), rtol=1e-6)


@gpu
@needs_gpu
def test_shard_map_over_all_gpus():
    from jax.sharding import PartitionSpec as P

    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:
        from jax.experimental.shard_map import shard_map
    n_dev = len(jax.devices("gpu"))
    mesh = jax.make_mesh((n_dev,), ("i",))
    sharding = jax.sharding.NamedSharding(mesh, P("i"))
    x = jax.device_put(rand(256 * n_dev, 14), sharding)
    y = jax.device_put(rand(256 * n_dev, 15), sharding)
    f = shard_map(lambda x, y: run_saxpy(x, y, 2.0), mesh=mesh, in_specs=(P("i"), P("i")),
                  out_specs=P("i"))
    close(jax.jit(f)(x, y), 2 * f64(x) + f64(y))


@gpu
@needs_gpu
def test_dynamic_shared_memory_over_48k():
    n = 256 * 6
    x = rand(n, 16)
    out = launch(REVERSE, [x], [f32((n,))], n // 256, 256)[0]
    np.testing.assert_array_equal(out, np.asarray(x).reshape(-1, 256)[:, ::-1].reshape(-1))
    fn = driver.kernel_image("reverse_block", REVERSE.ptx, "sm_90", DYN).load(0)
    attr = driver.cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    assert driver.check(driver.cu.cuFuncGetAttribute(attr, fn), "cuFuncGetAttribute") == DYN


@gpu
@needs_gpu
def test_too_much_shared_memory_is_refused():
    big = kernel("huge_smem", [arr("x"), arr("out")], "ret;", options={"dynamic_shared_bytes": 1 << 20})
    with pytest.raises(ValueError, match="huge_smem.*shared memory.*device 0"):
        launch(big, [jnp.ones(4)], [f32((4,))], 1, 32)


@gpu
@needs_gpu
@pytest.mark.parametrize("compiler", ["driver", "ptxas"])
def test_invalid_ptx_error_names_kernel_and_call(cache_dir, monkeypatch, compiler):
    """The driver's JIT or a ptxas (runtime/compiler.py): either way the error names the
    kernel, the call, and what ptxas said."""
    from ptxpy.transpiler.ptxas import find_ptxas

    if compiler == "ptxas" and find_ptxas() is None:
        pytest.skip("no ptxas")
    monkeypatch.setenv("PTXPY_PTXAS", "driver" if compiler == "driver" else find_ptxas())
    if compiler == "ptxas" and runtime_compiler.chosen_ptxas(driver.driver_version()) is None:
        pytest.skip("the ptxas found is not of the driver's major version")
    name = f"bad_kernel_{compiler}"
    bad = kernel(name, [arr("x"), arr("out")], "    bogus.op.f32 %f1, %f2;\n    ret;")
    with pytest.raises(driver.CudaError) as info:
        launch(bad, [jnp.ones(4)], [f32((4,))], 1, 32)
    msg = str(info.value)
    call = "cuLink" if compiler == "driver" else "ptxas failed"
    assert name in msg and call in msg and "ptxas" in msg and "bogus" in msg, msg
    assert info.value.kernel == name


@gpu
@needs_gpu
def test_missing_entry_error():
    wrong = CompiledKernel("not_there", ADD1.ptx, ADD1.params)
    with pytest.raises(driver.CudaError, match="cuModuleGetFunction failed for kernel 'not_there'"):
        launch(wrong, [jnp.ones(4)], [f32((4,))], 1, 32)


@gpu
@needs_gpu
def test_unknown_plan_is_reported_by_the_handler():
    ffi.register_target()
    with pytest.raises(Exception, match="no ptxpy launch plan 424242"):
        jax.block_until_ready(ffi.call(424242, [jnp.ones(4)], [f32((4,))]))
    np.testing.assert_allclose(run_saxpy(jnp.ones(4), jnp.ones(4), 1.0), 2.0)  # still healthy


@gpu
@needs_gpu
def test_cubin_is_cached_beside_ptx(cache_dir):
    k = kernel("cached_add1", ADD1.params, ADD1_BODY)
    np.testing.assert_allclose(launch(k, [jnp.zeros(8)], [f32((8,))], 1, 32)[0], 1.0)
    assert list((cache_dir / "cubin").glob("*.cubin"))


@gpu
@needs_gpu
def test_chained_kernels_in_jit_replay():
    def chain(x):
        for _ in range(20):
            x = launch(ADD1, [x], [f32(x.shape)], 8, 128)[0]
        return x

    f = jax.jit(chain)
    x = jnp.zeros(1024, jnp.float32)
    for _ in range(3):
        out = f(x)
    np.testing.assert_array_equal(out, 20.0)


@gpu
@needs_gpu
def test_jit_kernels_are_recorded_as_pdl_graph_nodes():
    """Where JAX's XLA has the FFI record stage (record_c_api.h), a @ptxpy.jit kernel in a jitted
    chain becomes a kernel node of XLA's CUDA graph, launched with PDL on sm_90+."""
    has_record_stage = os.path.exists(os.path.join(jax.ffi.include_dir(), "xla", "ffi", "api",
                                                   "record_c_api.h"))
    add1 = _add1_for_recording
    sm = jax.devices()[0].compute_capability
    records = ffi.records
    f = jax.jit(lambda x: add1(add1(add1(add1(add1(add1(x))) * 2.0))))  # XLA graphs >= 5 ops
    x = jnp.arange(1024, dtype=jnp.float32)
    for _ in range(3):
        out = f(x)
    np.testing.assert_array_equal(out, (np.arange(1024) + 3) * 2 + 3)
    assert ffi.recording_registered == has_record_stage
    if has_record_stage:
        assert ffi.records - records >= 2
        plans = [p for p in ffi._plans.values() if p.kernel == "_add1_for_recording"]
        assert plans and all(p.pdl == (float(sm) >= 9.0) for p in plans)


@gpu
@needs_gpu
def test_target_without_the_record_stage_is_stream_captured():
    """A target registered with record=False serves XLA's execute stage only: in a jitted chain
    XLA captures its launches into the graph and never asks it to record a node."""
    target = ffi.register_target("ptxpy_test_captured", record=False)
    prepared = launch_mod.prepare(ADD1, [jnp.zeros(1024, jnp.float32)], [f32((1024,))], 8, 128)

    def chain(x):
        for _ in range(6):      # XLA makes CUDA graphs of 5 ops or more
            x = ffi.call(prepared.key, [x], prepared.out_types, target=target)[0]
        return x

    records = ffi.records
    f = jax.jit(chain)
    for _ in range(3):
        out = f(jnp.zeros(1024, jnp.float32))
    np.testing.assert_array_equal(out, 6.0)
    assert ffi.records == records


@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: (x.shape[0] // 128,), block=128)
def _add1_for_recording(x: ptxpy.Array[ptxpy.f32], out: ptxpy.Array[ptxpy.f32]):
    i = ptxpy.global_id(0)
    out[i] = x[i] + 1.0
