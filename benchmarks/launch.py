"""Launch overhead of ptxpy kernels from JAX, against Pallas and plain XLA (needs a CUDA GPU).

    python benchmarks/launch.py [--json OUT.json]

Measures, each in a fresh process so that XLA flags and caches are what each row says:
  * chain: 100 chained tiny kernels (x + 1 on 1024 f32) in one jax.jit, time per kernel, for the
    ptxpy Python (ctypes) FFI handler, a C FFI handler (built here with gcc, for comparison),
    and Pallas (Triton); with XLA's CUDA-graph command buffers on (default) and off; also with
    the last outputs kept alive, so that every call moves the graph's buffers;
  * eager: one call plus block_until_ready (of `launch()` of PTX and of a `@ptxpy.jit` kernel),
    against an eager XLA op (x + 1) and Pallas;
  * cold / warm start: first call in a new process with an empty cache, and with the cache warm;
  * first call of `@ptxpy.jit` saxpy in a new process: with empty caches, and with ptxpy's disk
    cache and JAX's persistent compilation cache warm; each also without ptxpy's background
    preloads (PTXPY_PRELOAD=0). Nothing of ptxpy's runtime is imported before the call. The warm
    rows load the call's XLA executable that the "caches empty" process kept at its exit
    (runtime/executables.py); run with PTXPY_EXECUTABLE_CACHE=0 for JAX's persistent cache alone.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

N, BLOCK, CHAIN = 1024, 256, 100
ROUNDS = 9

C_HANDLER = r"""
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include "xla/ffi/api/c_api.h"

typedef int (*launch_fn)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void*, void**, void**);
static launch_fn cu_launch;

static int64_t attr_i64(const XLA_FFI_Attrs* attrs, const char* name) {
  for (int64_t i = 0; i < attrs->size; ++i) {
    const XLA_FFI_ByteSpan* n = attrs->names[i];
    if (n->len == strlen(name) && memcmp(n->ptr, name, n->len) == 0)
      return *(int64_t*)((XLA_FFI_Scalar*)attrs->attrs[i])->value;
  }
  return 0;
}

static XLA_FFI_Error* fail(const XLA_FFI_Api* api, const char* msg) {
  XLA_FFI_Error_Create_Args a = {XLA_FFI_Error_Create_Args_STRUCT_SIZE, NULL, msg,
                                 XLA_FFI_Error_Code_INTERNAL};
  return api->XLA_FFI_Error_Create(&a);
}

XLA_FFI_Error* ptxpy_c_launch(XLA_FFI_CallFrame* f) {
  if (f->extension_start && f->extension_start->type == XLA_FFI_Extension_Metadata) {
    XLA_FFI_Metadata* m = ((XLA_FFI_Metadata_Extension*)f->extension_start)->metadata;
    m->api_version.major_version = 0;
    m->api_version.minor_version = 1;
    m->traits = XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE;
    return NULL;
  }
  if (f->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
  if (!cu_launch) cu_launch = (launch_fn)dlsym(dlopen("libcuda.so.1", RTLD_NOW), "cuLaunchKernel");
  XLA_FFI_Stream_Get_Args s = {XLA_FFI_Stream_Get_Args_STRUCT_SIZE, NULL, f->ctx, NULL};
  XLA_FFI_Error* e = f->api->XLA_FFI_Stream_Get(&s);
  if (e) return e;
  uint64_t ptrs[32]; uint32_t dims[128]; void* params[160]; int np = 0, nd = 0, nb = 0;
  for (int pass = 0; pass < 2; ++pass) {
    int64_t size = pass ? f->rets.size : f->args.size;
    void** items = pass ? f->rets.rets : f->args.args;
    for (int64_t i = 0; i < size; ++i) {
      XLA_FFI_Buffer* b = (XLA_FFI_Buffer*)items[i];
      ptrs[nb] = (uint64_t)b->data; params[np++] = &ptrs[nb++];
      for (int64_t d = 0; d < b->rank; ++d) { dims[nd] = (uint32_t)b->dims[d]; params[np++] = &dims[nd++]; }
    }
  }
  int r = cu_launch((void*)attr_i64(&f->attrs, "fn"), attr_i64(&f->attrs, "grid"), 1, 1,
                    attr_i64(&f->attrs, "block"), 1, 1, 0, s.stream, params, NULL);
  return r == 0 ? NULL : fail(f->api, "cuLaunchKernel failed");
}
"""


# --- measurements (run inside a worker process) ---------------------------------------------

def _median_time(fn, reps: int, warmup: int = 3) -> float:
    import jax

    for _ in range(warmup):
        jax.block_until_ready(fn())
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _add1_kernel():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from test_runtime import ADD1

    return ADD1


def _ptxpy_add1(grid: int = N // BLOCK, block: int = BLOCK):
    import jax
    import jax.numpy as jnp

    from ptxpy.runtime.launch import launch

    k = _add1_kernel()
    return lambda x: launch(k, [x], [jax.ShapeDtypeStruct(x.shape, jnp.float32)], grid, block)[0]


def _ptxpy_jit_add1():
    """x + 1 written in ptxpy (benchmarks/chain_kernel.py), compiled for this GPU."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from chain_kernel import add1_kernel

    return add1_kernel


def _pallas_add1():
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def body(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1.0

    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((N,), jnp.float32))


ADD1_POINTERS_ONLY = r"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry add1p(.param .u64 px, .param .u64 pout)
{
  .reg .b32 %r<5>;
  .reg .b64 %rd<6>;
  .reg .f32 %f<3>;
  ld.param.u64 %rd1, [px];
  ld.param.u64 %rd2, [pout];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  mul.wide.s32 %rd3, %r4, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.rn.f32 %f2, %f1, 0f3F800000;
  add.s64 %rd5, %rd2, %rd3;
  st.global.f32 [%rd5], %f2;
  ret;
}
"""


def _xla_ptx_add1():
    """The same kernel written by hand with pointer parameters only, launched by XLA itself through
    its `__gpu$xla.gpu.ptx` custom call (a native kernel thunk, no FFI handler): the floor for
    any custom-call kernel."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    call = jax.ffi.ffi_call("__gpu$xla.gpu.ptx", jax.ShapeDtypeStruct((N,), jnp.float32))
    attrs = dict(name="add1p", kernel_type="ptx", kernel_data=ADD1_POINTERS_ONLY,
                 grid_x=np.int64(N // BLOCK), grid_y=np.int64(1), grid_z=np.int64(1),
                 block_x=np.int64(BLOCK), block_y=np.int64(1), block_z=np.int64(1),
                 shared_mem_bytes=np.int64(0), output_indices=np.array([1], np.int64))
    return lambda x: call(x, **attrs)


def _c_add1(workdir: str):
    import ctypes

    import jax
    import jax.numpy as jnp
    import numpy as np

    from ptxpy.runtime import driver
    from ptxpy.runtime.launch import gpu_ordinals

    src, lib = os.path.join(workdir, "h.c"), os.path.join(workdir, "libh.so")
    with open(src, "w") as f:
        f.write(C_HANDLER)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", f"-I{jax.ffi.include_dir()}", src, "-o", lib,
                    "-ldl"], check=True)
    handle = ctypes.CDLL(lib)
    jax.ffi.register_ffi_target("ptxpy_c_launch", jax.ffi.pycapsule(handle.ptxpy_c_launch),
                                platform="CUDA")
    k = _add1_kernel()
    ordinal = gpu_ordinals()[0]
    fn = driver.kernel_image(k.name, k.ptx, k.arch).load(ordinal)
    call = jax.ffi.ffi_call("ptxpy_c_launch", jax.ShapeDtypeStruct((N,), jnp.float32),
                            vmap_method="sequential")
    attrs = dict(fn=np.int64(int(fn)), grid=np.int64(N // BLOCK), block=np.int64(BLOCK))
    return lambda x: call(x, **attrs)


def _chain(op):
    def f(x):
        for _ in range(CHAIN):
            x = op(x)
        return x
    return f


def _keeping_outputs(f, x):
    """`f(x)` that keeps the last two outputs alive, as a loop `y = step(y)` does: each call's
    buffers land elsewhere, so XLA updates every node of its CUDA graph that touches them."""
    held: list = []

    def call():
        held.append(f(x))
        del held[:-2]
        return held[-1]
    return call


def worker_chain(result: dict, workdir: str) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    from ptxpy.runtime import ffi

    x = jnp.asarray(np.random.default_rng(0).standard_normal(N).astype(np.float32))
    ops = {"ptxpy launch()": _ptxpy_add1(), "Pallas": _pallas_add1(),
           "ptxpy, one block of 1024 threads": _ptxpy_add1(1, N),
           "ptxpy @jit kernel (recorded, PDL)": _ptxpy_jit_add1()}
    try:
        ops["C handler"] = _c_add1(workdir)
    except (OSError, subprocess.CalledProcessError) as e:
        result["c_handler_error"] = str(e)
    ops["XLA's own PTX kernel call (__gpu$xla.gpu.ptx)"] = _xla_ptx_add1()
    chains = {}
    for name, op in ops.items():
        chains[name] = f = jax.jit(_chain(op))
        np.testing.assert_allclose(f(x), np.asarray(x) + CHAIN, rtol=1e-5)
    result["handler registered for the record stage"] = ffi.recording_registered
    result["C handler registered"] = ffi._native_handler_registered
    # The systems take turns, ROUNDS times, so that drifts of the machine hit all of them alike.
    per_round: dict[str, list] = {name: [] for name in chains}
    python_calls = {name: [0, 0] for name in chains}     # [execute, record] calls into Python
    kept: dict[str, list] = {name: [] for name in chains}
    for _ in range(ROUNDS):
        for name, f in chains.items():
            calls, records = ffi.calls, ffi.records
            per_round[name].append(_median_time(lambda: f(x), reps=50) / CHAIN * 1e6)
            python_calls[name][0] += ffi.calls - calls
            python_calls[name][1] += ffi.records - records
            kept[name].append(_median_time(_keeping_outputs(f, x), reps=20) / CHAIN * 1e6)
    result["C handler (launches, node updates, calls passed to Python)"] = list(ffi._native.counters())
    for name, times in per_round.items():
        result[f"chain/{name}"] = statistics.median(times)
        result[f"chain/{name}, fastest round"] = min(times)
        result[f"chain/{name}, outputs kept"] = statistics.median(kept[name])
    for name, (calls, records) in python_calls.items():
        if name.startswith("ptxpy"):
            result[f"{name}: handler calls per chain call"] = calls / (53 * ROUNDS)
            result[f"{name}: record calls per chain call"] = records / (53 * ROUNDS)


def worker_chain_profile(result: dict, workdir: str) -> None:
    """Where a chained kernel's time goes: from the GPU's own records (CUPTI, JAX's profiler) of
    one replay of each chain, the median kernel duration and the median start-to-start interval
    of consecutive kernels."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from kernels import profiled_kernels

    x = jnp.asarray(np.random.default_rng(0).standard_normal(N).astype(np.float32))
    ops = {"ptxpy": _ptxpy_add1(), "Pallas": _pallas_add1(),
           "ptxpy, one block of 1024 threads": _ptxpy_add1(1, N),
           "ptxpy @jit kernel (recorded, PDL)": _ptxpy_jit_add1(),
           "XLA's own PTX kernel call": _xla_ptx_add1()}
    for name, op in ops.items():
        f = jax.jit(_chain(op))
        for _ in range(3):
            jax.block_until_ready(f(x))
        kernels = profiled_kernels(lambda: jax.block_until_ready(f(x)))[-CHAIN:]
        starts = [k[0] for k in kernels]
        result[f"chain profile/{name}: kernels seen"] = len(kernels)
        result[f"chain profile/{name}: kernel duration (us)"] = statistics.median(k[1] for k in kernels)
        result[f"chain profile/{name}: start to start (us)"] = statistics.median(
            b - a for a, b in zip(starts, starts[1:]))
        result[f"chain profile/{name}: kernel name"] = kernels[0][2][:60]
        # As the timed loop runs it (each call waited for): how much of a call the GPU is busy.
        calls = 5
        kernels = profiled_kernels(lambda: [jax.block_until_ready(f(x)) for _ in range(calls)])
        kernels = [k for k in kernels if k[2] == kernels[-1][2]][-CHAIN * calls:]
        firsts = [kernels[i * CHAIN][0] for i in range(calls)]
        result[f"chain profile/{name}: GPU span of one call (us)"] = statistics.median(
            kernels[i * CHAIN + CHAIN - 1][0] + kernels[i * CHAIN + CHAIN - 1][1] - firsts[i]
            for i in range(calls))
        result[f"chain profile/{name}: call to call, waited (us)"] = statistics.median(
            b - a for a, b in zip(firsts, firsts[1:]))


def worker_chain_host(result: dict, workdir: str) -> None:
    """Where a chain call's host time goes: from one JAX profile of CALLS calls of each chain,
    every host-side event (XLA's thunks, CUDA API calls) summed per name and divided by the
    calls, the largest first; and the host time of a call that is not waited for."""
    import glob
    import gzip

    import jax
    import jax.numpy as jnp
    import numpy as np

    calls = 20
    x = jnp.asarray(np.random.default_rng(0).standard_normal(N).astype(np.float32))
    ops = {"ptxpy @jit kernel (recorded, PDL)": _ptxpy_jit_add1(), "Pallas": _pallas_add1(),
           "XLA's own PTX kernel call": _xla_ptx_add1()}
    for name, op in ops.items():
        f = jax.jit(_chain(op))
        for _ in range(5):
            jax.block_until_ready(f(x))
        dispatch = []
        for _ in range(50):
            t0 = time.perf_counter()
            y = f(x)
            dispatch.append(time.perf_counter() - t0)
            jax.block_until_ready(y)
        result[f"chain host/{name}: dispatch, not waited (us)"] = statistics.median(dispatch) * 1e6
        folder = os.path.join(workdir, name.split()[0])
        jax.profiler.start_trace(folder, create_perfetto_trace=True)
        for _ in range(calls):
            jax.block_until_ready(f(x))
        jax.profiler.stop_trace()
        [path] = glob.glob(os.path.join(folder, "**", "perfetto_trace.json.gz"), recursive=True)
        with gzip.open(path) as fh:
            events = json.load(fh)["traceEvents"]
        procs = {e["pid"]: e.get("args", {}).get("name", "") for e in events
                 if e.get("ph") == "M" and e.get("name") == "process_name"}
        per_name: dict = {}
        for e in events:
            if e.get("ph") == "X" and "dur" in e and "GPU" not in procs.get(e.get("pid"), "GPU"):
                total, count = per_name.get(e["name"], (0.0, 0))
                per_name[e["name"]] = (total + e["dur"], count + 1)
        top = sorted(per_name.items(), key=lambda kv: -kv[1][0])[:25]
        result[f"chain host/{name}: events per call (us, count)"] = [
            [event[:70], round(total / calls, 2), round(count / calls, 2)] for event, (total, count) in top]


def worker_eager(result: dict, workdir: str) -> None:
    import jax.numpy as jnp
    import numpy as np

    x = jnp.asarray(np.random.default_rng(0).standard_normal(N).astype(np.float32))
    jitted = _ptxpy_jit_add1()

    def checked_every_call(v):    # as before call plans were kept (session 52)
        jitted._plans.clear()
        return jitted(v)

    ops = {"ptxpy": _ptxpy_add1(), "ptxpy @jit kernel": jitted,
           "ptxpy @jit kernel, checked every call": checked_every_call,
           "XLA op (x + 1)": lambda v: v + 1.0, "Pallas": _pallas_add1()}
    try:
        ops["C handler"] = _c_add1(workdir)
    except (OSError, subprocess.CalledProcessError) as e:
        result["c_handler_error"] = str(e)
    for name, op in ops.items():
        np.testing.assert_allclose(op(x), np.asarray(x) + 1, rtol=1e-6)
        result[f"eager/{name}"] = _median_time(lambda: op(x), reps=300, warmup=20) * 1e6
    from ptxpy.runtime import native
    result["C handler (launches, node updates, calls passed to Python)"] = list(native.counters())
    result.update(_python_side_cost(x))


def _python_side_cost(x) -> dict:
    """Median times of launch()'s own Python: the full check-and-plan path (run once per trace)
    and the eager fast path's lookup."""
    import jax
    import jax.numpy as jnp

    from ptxpy.runtime import launch as launch_mod

    k, out = _add1_kernel(), [jax.ShapeDtypeStruct(x.shape, jnp.float32)]
    jitted = _ptxpy_jit_add1()
    paths = {"prepare() (trace time)": lambda: launch_mod.prepare(k, [x], out, N // BLOCK, BLOCK),
             "eager lookup": lambda: launch_mod._eager_signature(k, [x], out, N // BLOCK, BLOCK, None),
             "@jit call's checks, first time (Kernel._prepare)": lambda: jitted._prepare((x,), {}),
             "@jit call's checks, again (Kernel._prepared_call)": lambda: jitted._prepared_call((x,), {})}
    costs = {}
    for name, fn in paths.items():
        times = []
        for _ in range(300):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        costs[f"eager/ptxpy Python: {name}"] = statistics.median(times) * 1e6
    return costs


def worker_cold(result: dict, workdir: str) -> None:
    t0 = time.perf_counter()
    import jax
    import jax.numpy as jnp

    from ptxpy.runtime import driver
    from ptxpy.runtime.launch import gpu_ordinals

    x = jnp.ones(N, jnp.float32).block_until_ready()
    ordinal = gpu_ordinals()[0]
    driver.primary_context(ordinal), driver.device_limits(ordinal), driver.driver_version()
    k = _add1_kernel()
    t1 = time.perf_counter()
    image = driver.kernel_image(k.name, k.ptx, k.arch)
    image.load(ordinal)
    t2 = time.perf_counter()
    op = _ptxpy_add1()
    jax.block_until_ready(op(x))
    t3 = time.perf_counter()
    jax.block_until_ready(op(x))
    t4 = time.perf_counter()
    result.update({"import jax + first array + CUDA init (s)": t1 - t0, "PTX->cubin + module load (ms)": (t2 - t1) * 1e3,
                   "first call incl. XLA compile (ms)": (t3 - t2) * 1e3,
                   "second call (ms)": (t4 - t3) * 1e3})


def worker_micro(result: dict, workdir: str) -> None:
    """Host-side cost of the handler's driver calls: cuda-python against ctypes on libcuda."""
    import jax
    import jax.numpy as jnp

    from ptxpy.runtime import driver, ffi
    from ptxpy.runtime import launch as launch_mod

    k = _add1_kernel()
    x = jnp.zeros(N, jnp.float32)
    prepared = launch_mod.prepare(k, [x], [jax.ShapeDtypeStruct((N,), jnp.float32)], N // BLOCK, BLOCK)
    plan = ffi.plan(prepared.key)
    out = jnp.zeros(N, jnp.float32)
    ordinal = launch_mod.gpu_ordinals()[0]
    with driver.pushed(driver.primary_context(ordinal)):
        stream = int(driver.check(driver.cu.cuStreamCreate(1), "cuStreamCreate"))
    params = plan.fill([x.unsafe_buffer_pointer(), out.unsafe_buffer_pointer()])
    fn = plan.image.load(ordinal)
    grid, block = plan.grid, plan.block

    def cuda_python():
        driver.check(driver.cu.cuLaunchKernel(fn, *grid, *block, 0, stream, params, 0), "launch")

    def handler_path():
        driver.launch_on_stream(plan.image, grid, block, 0, stream, params)

    def stream_ctx():
        driver.cu.cuStreamGetCtx(stream)

    for name, op in [("cuLaunchKernel via cuda-python", cuda_python),
                     ("driver.launch_on_stream (ctx lookup + launch)", handler_path),
                     ("cuStreamGetCtx via cuda-python", stream_ctx),
                     ("LaunchPlan.fill (2 pointers)", lambda: plan.fill([1, 2]))]:
        samples = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(400):
                op()
            samples.append((time.perf_counter() - t0) / 400)
            driver.check(driver.cu.cuStreamSynchronize(stream), "cuStreamSynchronize")
        result[f"host/{name}"] = statistics.median(samples) * 1e6


def worker_first_call(result: dict, workdir: str) -> None:
    """The first call of a `@ptxpy.jit` saxpy in a new process, as a program makes it: the
    program imports JAX and its kernels, sets up its arrays (JAX initialises the GPU), then calls.
    Timed from the call to its result. Run with empty caches (cold) and again with ptxpy's disk
    cache and JAX's persistent compilation cache both warm (warm start)."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_compilation_cache_dir", os.environ["BENCH_JAX_CACHE"])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
    from saxpy import saxpy  # noqa: E402

    from ptxpy import api

    x = jnp.ones(N, jnp.float32).block_until_ready()
    y = jnp.ones(N, jnp.float32).block_until_ready()
    preload_running = {part: api._preloading(part) for part in ("compiler", "runtime")}
    runtime_imported = "ptxpy.runtime.launch" in sys.modules
    t0 = time.perf_counter()
    # ptxpy's share, as the call does it: the kernel (disk cache or compiler), then its module
    # (importing the runtime, unless its preload has)
    kernel = saxpy.compiled(x, y, 2.0)
    t1 = time.perf_counter()
    from ptxpy.runtime import driver
    from ptxpy.runtime.launch import gpu_ordinals

    driver.kernel_image(kernel.name, kernel.ptx, kernel.arch).load(gpu_ordinals()[0])
    t2 = time.perf_counter()
    out = jax.block_until_ready(saxpy(x, y, 2.0))
    t3 = time.perf_counter()
    jax.block_until_ready(saxpy(x, y, 2.0))
    t4 = time.perf_counter()
    assert float(out[0]) == 3.0
    result.update({"first call (ms)": (t3 - t0) * 1e3,
                   "  ptxpy: signature + kernel (ms)": (t1 - t0) * 1e3,
                   "  ptxpy: cubin + module load (ms)": (t2 - t1) * 1e3,
                   "  the call: JAX trace + compile/load + run (ms)": (t3 - t2) * 1e3,
                   "second call (ms)": (t4 - t3) * 1e3,
                   "compiler preload still running at the call": preload_running["compiler"],
                   "runtime preload still running at the call": preload_running["runtime"],
                   "runtime imported before the call": runtime_imported,
                   "compiler imported": "ptxpy.transpiler.frontend" in sys.modules})


WORKERS = {"chain": worker_chain, "chain_profile": worker_chain_profile, "chain_host": worker_chain_host, "eager": worker_eager, "cold": worker_cold, "micro": worker_micro,
           "first_call": worker_first_call}


# --- driver ----------------------------------------------------------------------------------

def run_worker(name: str, env_extra: dict) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        env = dict(os.environ, **env_extra)
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, "--out", out.name]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            return {"error": proc.stderr[-3000:]}
        return json.load(open(out.name))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--out")
    ap.add_argument("--json")
    ap.add_argument("--only", help="run only the rows whose name contains this text")
    a = ap.parse_args()
    if a.worker:
        result: dict = {}
        with tempfile.TemporaryDirectory() as workdir:
            WORKERS[a.worker](result, workdir)
        json.dump(result, open(a.out, "w"))
        return
    cache_dir = tempfile.mkdtemp(prefix="ptxpy-bench-cache-")
    no_graphs = os.environ.get("XLA_FLAGS", "") + " --xla_gpu_enable_command_buffer="
    first = {"PTXPY_CACHE_DIR": tempfile.mkdtemp(), "BENCH_JAX_CACHE": tempfile.mkdtemp()}
    plan = [
        ("chain, CUDA graphs on (default)", "chain", {"PTXPY_CACHE_DIR": cache_dir}),
        ("chain, profiled", "chain_profile", {"PTXPY_CACHE_DIR": cache_dir}),
        ("chain, host side", "chain_host", {"PTXPY_CACHE_DIR": cache_dir}),
        ("chain, Python handler only", "chain", {"PTXPY_CACHE_DIR": cache_dir,
                                                 "PTXPY_NATIVE_HANDLER": "0"}),
        ("chain, CUDA graphs off", "chain", {"PTXPY_CACHE_DIR": cache_dir, "XLA_FLAGS": no_graphs}),
        # both through `jax.jit`: the second would otherwise load what the first kept at exit
        ("eager", "eager", {"PTXPY_CACHE_DIR": cache_dir, "PTXPY_EXECUTABLE_CACHE": "0"}),
        ("eager, Python handler only", "eager", {"PTXPY_CACHE_DIR": cache_dir,
                                                 "PTXPY_NATIVE_HANDLER": "0",
                                                 "PTXPY_EXECUTABLE_CACHE": "0"}),
        ("cold start (empty cache)", "cold", {"PTXPY_CACHE_DIR": tempfile.mkdtemp()}),
        ("warm start (cubin cached)", "cold", {"PTXPY_CACHE_DIR": cache_dir}),
        ("driver calls", "micro", {"PTXPY_CACHE_DIR": cache_dir}),
        ("first call, caches empty, no preload", "first_call",
         {"PTXPY_CACHE_DIR": tempfile.mkdtemp(), "BENCH_JAX_CACHE": tempfile.mkdtemp(), "PTXPY_PRELOAD": "0"}),
        ("first call, caches empty", "first_call", first),
        ("first call, caches warm", "first_call", first),
        ("first call, caches warm, no preload", "first_call", dict(first, PTXPY_PRELOAD="0")),
    ]
    runs = {name: run_worker(worker, env) for name, worker, env in plan
            if not a.only or a.only in name}
    print(f"\n{'run':34} {'measurement':46} value")
    for run, result in runs.items():
        for key, value in result.items():
            shown = f"{value:10.2f}" if isinstance(value, float) else str(value)
            unit = " us/kernel" if key.startswith("chain/") else " us/call" if key[:6] in ("eager/", "host/") else ""
            print(f"{run:34} {key:46} {shown}{unit}")
    if a.json:
        json.dump(runs, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
