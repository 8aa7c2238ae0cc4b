"""Run every example in examples/: each one's `main()` checks its own results against NumPy or
jax.numpy and raises if they differ.

Without the `gpu` marker the kernels run in ptxpy's PTX simulator at the examples' small sizes
(PTXPY_INTERPRET=1, and `jax.default_backend()` reported as "cpu" so that each example picks
its simulator size even on a machine with a GPU). The `gpu` variants run them on the GPU at
their realistic sizes; they are skipped without a CUDA GPU.
"""
import importlib
import os
import subprocess
import sys
import time
from pathlib import Path

import jax
import pytest

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
EXAMPLES = sorted(p.stem for p in EXAMPLES_DIR.glob("*.py"))


def _has_gpu() -> bool:
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(not _has_gpu(), reason="no CUDA GPU visible to JAX")


def _example(name: str):
    if str(EXAMPLES_DIR) not in sys.path:
        sys.path.insert(0, str(EXAMPLES_DIR))      # examples import one another by file name
    return importlib.import_module(name)


def test_every_example_is_listed_in_the_readme():
    readme = (EXAMPLES_DIR / "README.md").read_text()
    missing = [name for name in EXAMPLES if f"{name}.py" not in readme]
    assert not missing, f"examples/README.md does not list {missing}"


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_in_simulator(name, monkeypatch, capsys):
    monkeypatch.setenv("PTXPY_INTERPRET", "1")
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    module = _example(name)
    start = time.perf_counter()
    module.main()
    seconds = time.perf_counter() - start
    out = capsys.readouterr().out
    assert "match" in out, out
    print(f"{name}: {seconds:.1f} s in the simulator")


@pytest.mark.parametrize("threads", [128, 256, 512])
def test_rms_norm_longest_row_held_in_registers(threads, monkeypatch):
    """The longest row each block size holds in registers (MAX_CACHE float4s per thread), and
    one float4 more (the next block size, or the row read twice): the example's own simulator
    sizes reach neither."""
    import numpy as np
    monkeypatch.setenv("PTXPY_INTERPRET", "1")
    rms = _example("rms_norm")
    cols = threads * 4 * rms.MAX_CACHE
    assert rms.launch_shape(cols) == (threads, rms.MAX_CACHE)
    assert rms.launch_shape(cols + 4) != (threads, rms.MAX_CACHE)
    rng = np.random.default_rng(threads)
    for c in (cols, cols + 4):
        x = rng.standard_normal((2, c), np.float32)
        w = rng.standard_normal(c, np.float32)
        out = np.asarray(rms.rms_norm(x, w))
        ref = x / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=1, keepdims=True) + rms.EPS) * w
        np.testing.assert_allclose(out, ref, rtol=2e-5, atol=2e-5)


def test_example_runs_as_a_script():
    # JAX_PLATFORMS=cpu: in the simulator anyway, and on a GPU machine this process already
    # holds most of the GPU's memory (JAX preallocates).
    env = dict(os.environ, PTXPY_INTERPRET="1", JAX_PLATFORMS="cpu")
    result = subprocess.run([sys.executable, str(EXAMPLES_DIR / "add_vectors.py"), "--size", "1001"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "matches" in result.stdout


@gpu
@needs_gpu
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_on_gpu(name, capsys):
    module = _example(name)
    module.main()
    out = capsys.readouterr().out
    assert "match" in out, out
