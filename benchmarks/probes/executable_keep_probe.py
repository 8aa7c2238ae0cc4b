"""What keeping an eager call's executable costs a process at exit (runtime/executables.py):
one eager saxpy on 2^20 f32 in a new ptxpy cache folder, then `keep_pending()` timed (the
compile ahead of time, which JAX's caches answer, the serialization and the write), with the
size of the entry. On a GPU only:

    python benchmarks/probes/executable_keep_probe.py
"""
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    folder = tempfile.mkdtemp()
    os.environ["PTXPY_CACHE_DIR"] = folder
    os.environ["PTXPY_EXECUTABLE_CACHE"] = "1"
    sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
    import jax.numpy as jnp

    from saxpy import saxpy
    from ptxpy.runtime import executables

    x = jnp.ones(1 << 20, jnp.float32)
    y = jnp.ones(1 << 20, jnp.float32)
    assert float(saxpy(x, y, 2.0)[0]) == 3.0
    start = time.perf_counter()
    kept = executables.keep_pending()
    seconds = time.perf_counter() - start
    xla = os.path.join(folder, "xla")
    entries = [os.path.join(xla, name) for name in (os.listdir(xla) if os.path.isdir(xla) else [])]
    sizes = [os.path.getsize(path) for path in entries]
    print(f"kept {kept} executable(s) at exit in {seconds * 1e3:.2f} ms; entry bytes {sizes}")


if __name__ == "__main__":
    main()
