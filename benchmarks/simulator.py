"""Throughput of the PTX simulator: simulated thread-instructions per second.

    python benchmarks/simulator.py [--n 1048576] [--numba-n 16384] [--numba-python PYTHON]

Runs saxpy and a shared-memory block reduction (256 threads per block) over n elements with
`ptxpy.runtime.simulator`. When Numba with numba-cuda is importable (by this interpreter or by
--numba-python), the same kernels also run under Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1,
in a subprocess, on --numba-n elements since it is slow) and the ratio of the two rates is printed.
Thread-instruction counts are those of the PTX below, also used for Numba's rate, so the ratio is
a ratio of per-element times.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
import time

import numpy as np

from ptxpy.runtime.simulator import Module, run_kernel

HEADER = ".version 7.8\n.target sm_90\n.address_size 64\n"

SAXPY = HEADER + """
.visible .entry saxpy(.param .u64 x, .param .u64 y, .param .u64 out, .param .f32 a, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<10>;
    .reg .f32 %f<5>;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    ld.param.u32 %r5, [n];
    setp.ge.u32 %p1, %r4, %r5;
    @%p1 bra $DONE;
    ld.param.u64 %rd1, [x];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.nc.f32 %f1, [%rd4];
    ld.param.u64 %rd5, [y];
    cvta.to.global.u64 %rd6, %rd5;
    add.s64 %rd7, %rd6, %rd3;
    ld.global.nc.f32 %f2, [%rd7];
    ld.param.f32 %f3, [a];
    fma.rn.f32 %f4, %f3, %f1, %f2;
    ld.param.u64 %rd8, [out];
    cvta.to.global.u64 %rd8, %rd8;
    add.s64 %rd9, %rd8, %rd3;
    st.global.f32 [%rd9], %f4;
$DONE:
    ret;
}
"""
SAXPY_PER_THREAD = 23          # every instruction above, for an in-range thread

REDUCE = HEADER + """
.visible .entry block_sum(.param .u64 inp, .param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<4>;
    .shared .align 4 .b8 smem[1024];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r4, %r2, %r3, %r1;
    ld.param.u64 %rd1, [inp];
    cvta.to.global.u64 %rd1, %rd1;
    mul.wide.u32 %rd2, %r4, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    mov.u32 %r5, smem;
    shl.b32 %r6, %r1, 2;
    add.s32 %r7, %r5, %r6;
    st.shared.f32 [%r7], %f1;
    bar.sync 0;
    shr.u32 %r8, %r3, 1;
$LOOP:
    setp.ge.u32 %p1, %r1, %r8;
    @%p1 bra $SKIP;
    shl.b32 %r9, %r8, 2;
    add.s32 %r10, %r7, %r9;
    ld.shared.f32 %f2, [%r10];
    ld.shared.f32 %f3, [%r7];
    add.f32 %f3, %f3, %f2;
    st.shared.f32 [%r7], %f3;
$SKIP:
    bar.sync 0;
    shr.u32 %r8, %r8, 1;
    setp.ne.u32 %p2, %r8, 0;
    @%p2 bra $LOOP;
    setp.ne.u32 %p3, %r1, 0;
    @%p3 bra $END;
    ld.shared.f32 %f1, [smem];
    ld.param.u64 %rd4, [out];
    cvta.to.global.u64 %rd4, %rd4;
    mul.wide.u32 %rd5, %r2, 4;
    add.s64 %rd6, %rd4, %rd5;
    st.global.f32 [%rd6], %f1;
$END:
    ret;
}
"""


def reduce_instructions_per_block(threads: int = 256) -> int:
    prologue = 15 * threads                       # up to and including the first shr
    loop = 0
    s = threads // 2
    while s:
        loop += 6 * threads + 6 * s               # setp, bra, bar, shr, setp, bra + the body
        s //= 2
    epilogue = 3 * threads + 6                    # setp, bra, ret + thread 0's store
    return prologue + loop + epilogue


def timed(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run_ours(n: int) -> dict:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    saxpy = Module(SAXPY)
    t_saxpy = timed(lambda: run_kernel(saxpy, "saxpy", n // 256, 256, [x, y, out, 2.0, n]))
    assert np.array_equal(out, (np.float64(2.0) * x + y).astype(np.float32))
    sums = np.zeros(n // 256, np.float32)
    reduce = Module(REDUCE)
    t_reduce = timed(lambda: run_kernel(reduce, "block_sum", n // 256, 256, [x, sums]))
    assert np.allclose(sums, x.reshape(-1, 256).sum(axis=1), rtol=1e-4, atol=1e-4)
    return {"saxpy": t_saxpy, "reduce": t_reduce}


NUMBA_SCRIPT = textwrap.dedent("""
    import json, os, sys, time
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    import numpy as np
    from numba import cuda, float32

    @cuda.jit
    def saxpy(x, y, out, a, n):
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if i < n:
            out[i] = a * x[i] + y[i]

    @cuda.jit
    def block_sum(inp, out):
        s = cuda.shared.array(256, float32)
        t = cuda.threadIdx.x
        s[t] = inp[cuda.blockIdx.x * cuda.blockDim.x + t]
        cuda.syncthreads()
        k = cuda.blockDim.x // 2
        while k > 0:
            if t < k:
                s[t] += s[t + k]
            cuda.syncthreads()
            k //= 2
        if t == 0:
            out[cuda.blockIdx.x] = s[0]

    n = int(sys.argv[1])
    x = np.random.rand(n).astype(np.float32); y = np.random.rand(n).astype(np.float32)
    out = np.zeros(n, np.float32); sums = np.zeros(n // 256, np.float32)
    start = time.perf_counter(); saxpy[n // 256, 256](x, y, out, np.float32(2), n)
    t_saxpy = time.perf_counter() - start
    start = time.perf_counter(); block_sum[n // 256, 256](x, sums)
    t_reduce = time.perf_counter() - start
    print(json.dumps({"saxpy": t_saxpy, "reduce": t_reduce}))
""")


def run_numba(python: str, n: int) -> dict | None:
    probe = subprocess.run([python, "-c", "import numba, numba.cuda"], capture_output=True)
    if probe.returncode != 0:
        return None
    done = subprocess.run([python, "-c", NUMBA_SCRIPT, str(n)], capture_output=True, text=True)
    if done.returncode != 0:
        print("Numba simulator failed:", done.stderr.strip().splitlines()[-1:], file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--numba-n", type=int, default=1 << 14)
    parser.add_argument("--numba-python", default=sys.executable)
    args = parser.parse_args()
    instr = {"saxpy": lambda n: SAXPY_PER_THREAD * n,
             "reduce": lambda n: reduce_instructions_per_block() * (n // 256)}
    ours = run_ours(args.n)
    numba = run_numba(args.numba_python, args.numba_n)
    for name in ("saxpy", "reduce"):
        rate = instr[name](args.n) / ours[name]
        line = f"{name:7s} n={args.n}: {ours[name] * 1e3:8.1f} ms, {rate / 1e6:8.1f} M thread-instr/s"
        if numba:
            numba_rate = instr[name](args.numba_n) / numba[name]
            line += (f" | Numba CUDA simulator n={args.numba_n}: {numba[name]:.2f} s, "
                     f"{numba_rate / 1e6:.3f} M thread-instr/s | ratio {rate / numba_rate:,.0f}x")
        print(line)
    if numba is None:
        print("(Numba with numba-cuda not importable: no comparison)")


if __name__ == "__main__":
    main()
