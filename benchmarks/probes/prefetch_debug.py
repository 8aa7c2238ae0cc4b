"""What a warm start's executables preload sees: one process calls saxpy and keeps its
executable, a second reports JAX's backends, the kernel's index, what the preload loaded, and
registers the FFI handler, deserializes and prefetches by hand (each error's traceback). On a
GPU only: `python benchmarks/probes/prefetch_debug.py`."""
import os
import subprocess
import sys
import tempfile
HERE = os.path.dirname(os.path.abspath(__file__))
CODE = r'''
import sys, time, json, traceback
sys.path.insert(0, sys.argv[1])
import jax, jax.numpy as jnp
from saxpy import saxpy
from ptxpy import api
x = jnp.ones(1 << 20, jnp.float32); y = jnp.ones(1 << 20, jnp.float32)
time.sleep(0.3)
from ptxpy.runtime import executables
info = {"preloads": {k: t.is_alive() for k, t in api._preloads.items()},
        "backends": {k: getattr(v, "platform", None) for k, v in executables.started_backends().items()},
        "owner": saxpy._owner(), "compiled_before": saxpy._compiled_before(),
        "index": executables._read_index(saxpy._owner()) if saxpy._owner() else None,
        "devices": [(d.platform, d.id) for d in jax.devices()],
        "prefetched": list(executables._prefetched), "prefetching": list(executables._prefetching)}
info["enabled"] = executables.enabled()
info["backend devices"] = [(k, d.platform, d.id) for k, b in executables.started_backends().items() for d in b.devices()]
info["started_device"] = str(executables._started_device("gpu", 0))
try:
    from ptxpy.runtime import ffi
    info["register"] = ffi.register_target()
except Exception:
    info["register error"] = traceback.format_exc()
try:
    import pickle
    from ptxpy.runtime import cache
    from jax.experimental.serialize_executable import deserialize_and_load
    payload = cache.read_digest("xla", info["index"][0][0])
    serialized, in_tree, out_tree = pickle.loads(payload)
    dev = executables._started_device("gpu", 0)
    deserialize_and_load(serialized, in_tree, out_tree, backend=dev.client, execution_devices=[dev])
    info["deserialize"] = "ok"
except Exception:
    info["deserialize error"] = traceback.format_exc()
try:
    info["prefetch now"] = executables.prefetch(saxpy._owner())
except Exception:
    info["prefetch error"] = traceback.format_exc()
out = saxpy(x, y, 2.0).block_until_ready()
info["used"] = {k: v for k, v in executables._used.items()}
print(json.dumps(info, default=str))
'''
env = dict(os.environ, PTXPY_CACHE_DIR=tempfile.mkdtemp())
ex = os.path.join(HERE, "..", "..", "examples")
for run in ("first", "second"):
    done = subprocess.run([sys.executable, "-c", CODE, ex], env=env, capture_output=True, text=True)
    print(run, done.returncode, done.stdout[-3000:], done.stderr[-3000:])
for root, dirs, files in os.walk(env["PTXPY_CACHE_DIR"]):
    print(root, files)
