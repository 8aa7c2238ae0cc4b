"""Eager calls' executables kept in the disk cache (runtime/executables.py), on XLA's CPU
backend: written by the first process, loaded by the next without tracing or compiling, and
every way out of that path (damaged entry, cache off, sharded operands, another device)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from ptxpy.runtime import cache, executables, ffi
from ptxpy.runtime import launch as launch_mod

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_runtime import ADD1, _emulate_add1  # noqa: E402  (hand-written x + 1, its host stand-in)

PARTS = {"plan": 1, "outs": [((6,), "float32")]}


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXPY_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("PTXPY_CACHE", raising=False)
    monkeypatch.delenv("PTXPY_EXECUTABLE_CACHE", raising=False)    # on by default
    for name in ("_used", "_prefetched", "_prefetching"):
        monkeypatch.setattr(executables, name, {})
    cache.clear_memory()
    yield tmp_path / "c"
    cache.clear_memory()


def _add_one(x):
    return [x + 1.0]


def _call(fn, operands, parts, *args):
    """A runner's first call, then what the process does at exit; returns the first output and
    whether an executable was kept (not loaded)."""
    runner = executables.eager_runner(fn, operands, parts)
    out = runner(*(args or operands))[0]
    return out, executables.keep_pending() > 0


def _entries(folder) -> list:
    xla = folder / "xla"
    return sorted(xla.iterdir()) if xla.exists() else []


def _no_jit(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("jax.jit was called")

    monkeypatch.setattr(jax, "jit", refuse)


def test_the_first_process_keeps_the_executable_the_next_loads_it(cache_dir, monkeypatch):
    x = jnp.arange(6, dtype=jnp.float32)
    out, kept = _call(_add_one, [x], PARTS)
    np.testing.assert_array_equal(out, np.arange(6) + 1)
    assert kept and len(_entries(cache_dir)) == 1
    _no_jit(monkeypatch)
    out, kept = _call(_add_one, [x], PARTS, x * 2)
    np.testing.assert_array_equal(out, np.arange(6) * 2 + 1)
    assert not kept and len(_entries(cache_dir)) == 1


def test_other_shapes_and_key_parts_are_other_entries(cache_dir):
    x = jnp.arange(6, dtype=jnp.float32)
    _call(_add_one, [x], PARTS)
    y = jnp.arange(7, dtype=jnp.float32)
    np.testing.assert_array_equal(_call(_add_one, [y], PARTS)[0], np.arange(7) + 1)
    _call(_add_one, [x], dict(PARTS, plan=2))
    assert len(_entries(cache_dir)) == 3


def test_a_damaged_entry_is_compiled_again(cache_dir, monkeypatch, caplog):
    x = jnp.arange(6, dtype=jnp.float32)
    _call(_add_one, [x], PARTS)
    (entry,) = _entries(cache_dir)
    header, _, payload = entry.read_bytes().partition(b"\n")
    entry.write_bytes(header + b"\n" + payload[:-7] + b"garbage")     # fails the checksum
    out, kept = _call(_add_one, [x], PARTS)
    np.testing.assert_array_equal(out, np.arange(6) + 1)
    assert kept and "corrupt" in caplog.text
    # a payload that checks out but is not an executable: loaded, refused, kept again
    cache.write_bytes("xla", dict(PARTS, **executables._environment(x.sharding._device),
                                  avals=[((6,), "float32")]), b"not a pickle")
    out, kept = _call(_add_one, [x], PARTS)
    np.testing.assert_array_equal(out, np.arange(6) + 1)
    assert kept
    _no_jit(monkeypatch)    # and the entry written again is good
    out, kept = _call(_add_one, [x], PARTS)
    np.testing.assert_array_equal(out, np.arange(6) + 1)
    assert not kept


@pytest.mark.parametrize("switch", ["PTXPY_CACHE=0", "PTXPY_EXECUTABLE_CACHE=0",
                                    "PTXPY_EXECUTABLE_CACHE=off"])
def test_without_the_disk_cache_it_is_jax_jit(cache_dir, monkeypatch, switch):
    name, value = switch.split("=")
    monkeypatch.setenv(name, value)
    x = jnp.arange(6, dtype=jnp.float32)
    out, kept = _call(_add_one, [x], PARTS)
    np.testing.assert_array_equal(out, np.arange(6) + 1)
    assert not kept and _entries(cache_dir) == []


def test_an_operand_that_is_not_a_jax_array_takes_jax_jit(cache_dir):
    x = np.arange(6, dtype=np.float32)
    out, kept = _call(_add_one, [x], PARTS)
    np.testing.assert_array_equal(out, np.arange(6) + 1)
    assert not kept and _entries(cache_dir) == []


def test_an_ffi_call_is_kept_and_loaded(cache_dir, monkeypatch):
    """The executable of ptxpy's FFI call (here the CPU registration of the ctypes handler,
    with a host stand-in for the launch) survives the round trip."""
    ran = []

    def emulate(plan, stream, pointers):
        _emulate_add1(plan, stream, pointers)
        ran.append(int.from_bytes(plan.params[8:12], "little"))

    target = ffi.register_target("ptxpy_test_executables", "cpu", emulate)
    x = jax.device_put(jnp.arange(6, dtype=jnp.float32), jax.devices("cpu")[0])
    inputs, outputs = launch_mod.split_params(ADD1, 1)
    values = launch_mod.check_args(ADD1, inputs, [x])
    out_types = launch_mod.check_out_types(ADD1, outputs, [jax.ShapeDtypeStruct((6,), jnp.float32)])
    _, slots, params, offsets = launch_mod.pack(ADD1, inputs, values, outputs, out_types)
    plan = ffi.LaunchPlan("add1", None, (1, 1, 1), (1, 1, 1), 0, params, offsets, slots)
    key = ffi.register_plan(plan, ("executables-test", params, tuple(slots)))

    def call(x):
        return ffi.call(key, [x], out_types, target=target)

    parts = {"plan": key, "target": target}
    out, kept = _call(call, [x], parts)
    np.testing.assert_array_equal(out, np.arange(6) + 1)
    _no_jit(monkeypatch)
    out, loaded = _call(call, [x], parts, x * 3)
    np.testing.assert_array_equal(out, np.arange(6) * 3 + 1)
    assert kept and not loaded and ran == [6, 6]


_SECOND_PROCESS = textwrap.dedent("""
    import sys
    import jax, jax.numpy as jnp, numpy as np
    from ptxpy.runtime import executables

    def add_one(x):
        return [x + 1.0]

    calls = []
    jit = jax.jit
    jax.jit = lambda *a, **k: calls.append(1) or jit(*a, **k)
    on = jax.devices()
    x = jax.device_put(jnp.arange(6, dtype=jnp.float32), on[0])
    runner = executables.eager_runner(add_one, [x], {"plan": 7})
    np.testing.assert_array_equal(runner(x)[0], np.arange(6) + 1)
    elsewhere = jax.device_put(x, on[1])     # refused by the executable: through jax.jit
    out = runner(elsewhere)[0]
    np.testing.assert_array_equal(out, np.arange(6) + 1)
    assert out.devices() == {on[1]}, out.devices()
    # kept for an array committed to the second device, and for an uncommitted one
    committed = executables.eager_runner(add_one, [elsewhere], {"plan": 8})
    assert committed(elsewhere)[0].devices() == {on[1]}
    loose = jnp.arange(6, dtype=jnp.float32)
    uncommitted = executables.eager_runner(add_one, [loose], {"plan": 9})
    np.testing.assert_array_equal(uncommitted(loose)[0], np.arange(6) + 1)
    kinds = [isinstance(r, executables._Runner) for r in (runner, committed, uncommitted)]
    print(sys.argv[1], len(calls), *kinds)
""")


def test_a_second_process_loads_what_the_first_wrote(cache_dir, tmp_path):
    script = tmp_path / "second.py"
    script.write_text(_SECOND_PROCESS)
    env = dict(os.environ, PTXPY_CACHE_DIR=str(cache_dir), JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    runs = [subprocess.run([sys.executable, str(script), name], env=env, capture_output=True,
                           text=True, timeout=120) for name in ("first", "second")]
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
    # the first process runs its calls through jax.jit (three) and keeps the executables when
    # it exits; the second loads them and takes jax.jit only for the first one's other device
    assert runs[0].stdout.split() == ["first", "3", "False", "False", "False"]
    assert runs[1].stdout.split() == ["second", "1", "True", "True", "True"]
    assert len(_entries(cache_dir)) == 3


def test_a_process_keeps_a_bounded_number_once_each(cache_dir, monkeypatch):
    monkeypatch.setattr(executables, "_PENDING_MOST", 2)
    for n in (3, 4, 5):
        x = jnp.arange(n, dtype=jnp.float32)
        executables.eager_runner(_add_one, [x], PARTS)(x)
    assert executables.keep_pending() == 2
    assert executables.keep_pending() == 0
    assert len(_entries(cache_dir)) == 2


def test_an_edited_runtime_does_not_load_what_an_older_one_kept(cache_dir, monkeypatch):
    """The FFI call an executable holds is the runtime's own: another runtime compiles anew."""
    x = jnp.arange(6, dtype=jnp.float32)
    assert _call(_add_one, [x], PARTS)[1]
    monkeypatch.setattr(cache, "runtime_fingerprint", lambda: "another runtime")
    out, kept = _call(_add_one, [x], PARTS)
    np.testing.assert_array_equal(out, np.arange(6) + 1)
    assert kept and len(_entries(cache_dir)) == 2


def test_the_runtimes_fingerprint_follows_its_sources(tmp_path, monkeypatch):
    first = cache._sources_fingerprint([str(tmp_path)], (".py", ".c"))
    (tmp_path / "handler.c").write_text("int x;")
    second = cache._sources_fingerprint([str(tmp_path)], (".py", ".c"))
    (tmp_path / "notes.txt").write_text("not a source")
    assert first != second == cache._sources_fingerprint([str(tmp_path)], (".py", ".c"))


# --- a kernel's index of its executables, loaded before its first call ------------------------

def _kept_for(owner: str, n: int):
    """A process's call of `_add_one` on n elements for kernel `owner`, kept at its exit."""
    x = jnp.arange(n, dtype=jnp.float32)
    executables.eager_runner(_add_one, [x], PARTS, owner)(x)
    executables.keep_pending()
    return x


def test_a_kernels_index_lists_its_calls_executables_latest_first(cache_dir):
    _kept_for("k.py:k", 6)
    (entry,) = _entries(cache_dir)
    device = jax.devices()[0]
    assert executables._read_index("k.py:k") == [(entry.stem, device.platform, device.id)]
    _kept_for("k.py:k", 7)
    index = executables._read_index("k.py:k")
    assert len(index) == 2 and index[1][0] == entry.stem
    _kept_for("k.py:k", 6)        # loaded from the disk cache: listed first again
    assert [e[0] for e in executables._read_index("k.py:k")] == [entry.stem, index[0][0]]
    assert executables._read_index("other.py:k") == []
    _kept_for("k.py:k", 8)
    executables._INDEX_MOST, most = 2, executables._INDEX_MOST
    try:
        _kept_for("k.py:k", 9)
        assert len(executables._read_index("k.py:k")) == 2
    finally:
        executables._INDEX_MOST = most


def test_prefetch_loads_the_indexed_executables_and_the_call_takes_them(cache_dir, monkeypatch):
    x = _kept_for("k.py:k", 6)
    _kept_for("k.py:k", 7)
    assert executables.prefetch("k.py:k") == 2
    assert executables.prefetch("k.py:k") == 0      # once
    _no_jit(monkeypatch)
    monkeypatch.setattr(cache, "read_digest", lambda kind, digest: pytest.fail("read from disk"))
    runner = executables.eager_runner(_add_one, [x], PARTS, "k.py:k")
    assert isinstance(runner, executables._Runner)
    np.testing.assert_array_equal(runner(x * 3)[0], np.arange(6) * 3 + 1)
    assert len(executables._prefetched) == 1      # the other call's, not taken


def test_prefetch_skips_what_cannot_be_loaded(cache_dir, monkeypatch):
    x = _kept_for("k.py:k", 6)
    (entry,) = _entries(cache_dir)
    entry.write_bytes(b"damaged")
    assert executables.prefetch("k.py:k") == 0
    out, kept = _call(_add_one, [x], PARTS)      # the call compiles it again
    np.testing.assert_array_equal(out, np.arange(6) + 1)
    assert kept
    monkeypatch.setenv("PTXPY_EXECUTABLE_CACHE", "0")
    executables._prefetching.clear()
    assert executables.prefetch("k.py:k") == 0
    assert executables.prefetch("never-called.py:k") == 0


def test_a_call_waits_for_its_executables_load_in_progress(cache_dir):
    import threading
    import time

    loading = executables._prefetching["d"] = threading.Event()

    def finish():
        time.sleep(0.05)
        executables._prefetched["d"] = "the executable"
        loading.set()

    threading.Thread(target=finish).start()
    assert executables._take_prefetched("d") == "the executable"
    assert executables._take_prefetched("d") is None and executables._take_prefetched("e") is None
