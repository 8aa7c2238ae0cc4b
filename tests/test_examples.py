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


def _row_kernel_case(name: str, rows: int, cols: int, rng):
    """(the example's wrapper applied to random rows, the float64 NumPy result)."""
    import numpy as np
    module = _example(name)
    x = rng.standard_normal((rows, cols), np.float32)
    v = rng.standard_normal((2, cols), np.float32)
    x64 = x.astype(np.float64)
    if name == "rms_norm":
        ref = x64 / np.sqrt(np.mean(x64 ** 2, axis=1, keepdims=True) + module.EPS) * v[0]
        return module.rms_norm(x, v[0]), ref
    if name == "softmax":
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        return module.softmax(x), e / e.sum(axis=1, keepdims=True)
    ref = (x64 - x64.mean(axis=1, keepdims=True)) / np.sqrt(x64.var(axis=1, keepdims=True) + module.EPS)
    return module.layer_norm(x, v[0], v[1]), ref * v[0] + v[1]


ROW_LAUNCH_SHAPES = [("rms_norm", 128), ("rms_norm", 256), ("rms_norm", 512),
                     ("softmax", 256), ("softmax", 512), ("layer_norm", 256), ("layer_norm", 512)]


@pytest.mark.parametrize("name, threads", ROW_LAUNCH_SHAPES)
def test_row_kernel_longest_row_held_in_registers(name, threads, monkeypatch):
    """The longest row each block size holds in registers (MAX_CACHE float4s per thread), and
    one float4 more (the next block size, or the row read twice): the examples' own simulator
    sizes reach neither."""
    import numpy as np
    monkeypatch.setenv("PTXPY_INTERPRET", "1")
    module = _example(name)
    cols = threads * 4 * module.MAX_CACHE
    assert module.launch_shape(cols) == (threads, module.MAX_CACHE)
    assert module.launch_shape(cols + 4) != (threads, module.MAX_CACHE)
    rng = np.random.default_rng(threads)
    for c in (cols, cols + 4):
        out, ref = _row_kernel_case(name, 2, c, rng)
        np.testing.assert_allclose(np.asarray(out), ref, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name, function", [("attention", "attention"),
                                            ("attention_wgmma", "attention_wgmma")])
def test_attention_head_dim_128(name, function, monkeypatch):
    """d = 128 (two 64-column blocks of each shared tile) and a second head, against float64
    NumPy, causal and not; the examples' own simulator runs take d = 64 only."""
    import jax.numpy as jnp
    import numpy as np
    monkeypatch.setenv("PTXPY_INTERPRET", "1")
    module = _example(name)
    keys = jax.random.split(jax.random.key(1), 3)
    q, k, v = (jax.random.normal(key, (1, 128, 2, 128)).astype(jnp.bfloat16) for key in keys)
    for causal in (False, True):
        out = np.asarray(getattr(module, function)(q, k, v, causal)).astype(np.float64)
        ref = _example("attention").reference(q, k, v, causal)
        assert np.max(np.abs(out - ref)) < 2e-2


@pytest.mark.parametrize("name, function", [("attention", "attention"),
                                            ("attention_wgmma", "attention_wgmma")])
def test_attention_refuses_shapes_it_does_not_cover(name, function):
    import jax.numpy as jnp
    module = _example(name)
    good = jnp.zeros((1, 128, 1, 64), jnp.bfloat16)
    for q in (jnp.zeros((1, 100, 1, 64), jnp.bfloat16), jnp.zeros((1, 128, 1, 96), jnp.bfloat16),
              jnp.zeros((1, 128, 1, 64), jnp.float32)):
        with pytest.raises(ValueError, match="bf16 q, k, v of one shape"):
            getattr(module, function)(q, q, q)
    with pytest.raises(ValueError, match="bf16 q, k, v of one shape"):
        getattr(module, function)(good, good, jnp.zeros((1, 256, 1, 64), jnp.bfloat16))


def test_scan_single_pass_with_tiles_by_block_index(tmp_path, monkeypatch):
    """scan_single_pass.py with IN_START_ORDER = 0 (tiles numbered by block index, no counter),
    the path its own run does not take, against jnp.cumsum around tile boundaries."""
    import importlib.util
    import jax.numpy as jnp
    import numpy as np
    monkeypatch.setenv("PTXPY_INTERPRET", "1")
    source = (EXAMPLES_DIR / "scan_single_pass.py").read_text()
    assert "\nIN_START_ORDER = 1 " in source
    path = tmp_path / "scan_by_block_index.py"
    path.write_text(source.replace("\nIN_START_ORDER = 1 ", "\nIN_START_ORDER = 0 "))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for n in (1, module.TILE, 3 * module.TILE + 5, 40 * module.TILE - 1):
        x = jax.random.randint(jax.random.key(n), (n,), -1000, 1000, jnp.int32)
        np.testing.assert_array_equal(np.asarray(module.cumsum(x)), np.asarray(jnp.cumsum(x)))
    ptx = module.scan_kernel.ptx(x, jnp.zeros((module._tiles(x) + 1, 2), jnp.int32))
    assert "atom.global.add" not in ptx and "ld.relaxed.gpu.global.u64" in ptx


@pytest.mark.parametrize("dtype", ["uint32", "int32", "float32"])
def test_radix_sort_extremes_and_ties(dtype, monkeypatch):
    """radix_sort.py on each kind's extreme keys (and for f32 infinities, signed zeros, NaNs of
    both signs, subnormals) mixed into few distinct keys over several tiles: the sort against
    NumPy's, the argsort against NumPy's stable one, pairs carrying f32 values."""
    import numpy as np
    monkeypatch.setenv("PTXPY_INTERPRET", "1")
    module = _example("radix_sort")
    rng = np.random.default_rng(7)
    if dtype == "float32":
        special = np.array([np.inf, -np.inf, 0.0, -0.0, np.nan, -np.nan, 1e-45, -1e-45,
                            3.4028235e38, -3.4028235e38, 1.0, -1.0], np.float32)
    else:
        info = np.iinfo(dtype)
        special = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1], dtype)
    x = rng.choice(special, 2 * module.TILE + 333)
    np.testing.assert_array_equal(np.asarray(module.radix_sort(x)), np.sort(x))
    order = np.argsort(x, kind="stable")
    np.testing.assert_array_equal(np.asarray(module.radix_argsort(x)), order)
    values = rng.standard_normal(x.size).astype(np.float32)
    keys, moved = module.sort_pairs(x, values)
    np.testing.assert_array_equal(np.asarray(keys), x[order])
    np.testing.assert_array_equal(np.asarray(moved), values[order])
    assert module.radix_sort(x[:0]).shape == (0,)


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
