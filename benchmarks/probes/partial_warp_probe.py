"""What the H100 gives for shuffles from lanes a partial warp does not have (docs/language.md,
"Partial warps"): the shuffle kernel of tests/test_gpu_language.py, compiled as ptxpy compiles it
for a block that may not be whole warps (member mask and clamp of the lanes present) and as for
whole warps (full mask, clamp 31: CUDA's `__shfl_*_sync(0xffffffff, ...)`), run with a block of
40 threads; prints, per form, how many results differ from SPEC 2.5's (the caller's own value).

    PTXPY_TEST_DEVICE=gpu python benchmarks/probes/partial_warp_probe.py
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "..", "tests")]

from gpu_launcher import gpu_run_kernel  # noqa: E402
from test_gpu_language import PARTIAL_WARP_SHUFFLES, src  # noqa: E402

from ptxpy.transpiler import driver  # noqa: E402


def expected(x, lanes, threads):
    outs = []
    for me in range(threads):
        first, lane = me - me % 32, me % 32
        present = min(threads - first, 32)
        read = lambda j: x[first + j] if 0 <= j < present else x[me]
        outs.append([read(lane + 5), read(lane ^ 6), read(lanes[me] % 32), read(lane - 3)])
    return np.array(outs, x.dtype)


def main():
    threads = 40
    rng = np.random.default_rng(7)
    program = driver.parse(src(PARTIAL_WARP_SHUFFLES.format(t="u32")), "probe.py")
    for whole in (False, True):
        kernel = driver.compile_kernel(program, "shuffles", None, frozenset(),
                                       driver.Options("sm_90", whole_warps=whole)).kernel
        wrong = 0
        for trial in range(20):
            x = rng.integers(0, 1 << 30, (1, threads)).astype(np.uint32)
            lanes = rng.integers(-40, 40, (1, threads)).astype(np.int32)
            out = np.zeros((1, threads, 4), np.uint32)
            votes = np.zeros((1, threads, 3), np.uint32)
            args = []
            for a in (x, lanes, out, votes):
                args += [a, *a.shape]
            gpu_run_kernel(kernel.ptx, kernel.name, (1, 1, 1), (threads, 1, 1), args)
            wrong += int((out.reshape(threads, 4) != expected(x[0], lanes[0], threads)).sum())
        form = "full mask, clamp 31" if whole else "lanes present"
        print(f"{form}: {wrong} of {20 * threads * 4} shuffle results differ from the caller's own value")


if __name__ == "__main__":
    main()
