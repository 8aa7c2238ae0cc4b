"""The Python of a repeated eager `@ptxpy.jit` call, on the CPU: everything from the call to the
jitted FFI call: the runtime's own checked launch (`PreparedCall`) runs, with a stand-in for
its jitted FFI call (so no GPU is needed, and JAX's own dispatch is left out). The kernel is benchmarks/launch.py's
`x + 1` on 1024 f32, compiled for sm_90.

    JAX_PLATFORMS=cpu python benchmarks/probes/eager_python_probe.py [--calls 20000] [--profile]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
os.environ.setdefault("PTXPY_PRELOAD", "0")


def stand_in(kernel):
    """The runtime's PreparedCall for `kernel`'s call, whose jitted FFI call is a stand-in that
    returns its operand: its own Python runs, no JAX dispatch."""
    from ptxpy.runtime import launch

    prepared = launch.PreparedCall(kernel, None, None, [0], [], {})
    prepared._jitted = lambda operand: [operand]
    return prepared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of the calls")
    args = parser.parse_args()

    import jax.numpy as jnp

    import ptxpy.api as api
    from chain_kernel import add1_kernel as kernel
    from ptxpy.runtime import launch

    launch.prepare = lambda k, *rest: stand_in(k)
    api._has_gpu, api._gpu_arch = (lambda: True), (lambda: "sm_90")
    kernel.interpret = False
    x = jnp.ones(1024, jnp.float32)
    kernel(x)
    times = []
    for _ in range(args.calls):
        start = time.perf_counter()
        kernel(x)
        times.append(time.perf_counter() - start)
    print(f"a repeated eager call's Python (the jitted FFI call left out): "
          f"{statistics.median(times) * 1e6:.2f} us (median of {args.calls})")
    if args.profile:
        import cProfile
        import pstats

        profile = cProfile.Profile()
        profile.runcall(lambda: [kernel(x) for _ in range(args.calls)])
        pstats.Stats(profile).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
