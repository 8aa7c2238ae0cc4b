"""Where a cold first call's time goes when it meets the preloads still running: each run is a
new process with empty caches (ptxpy's and JAX's) that does what launch.py's first-call worker
does (import JAX, import the kernel, make two arrays, wait `--delay` ms, call saxpy), and prints
a timeline in ms from the process's first line: the main thread's steps, each preload step (start
and end), and the longest stretches in which a thread that asks to wake every millisecond did not
run (the GIL held by someone else, or the thread not scheduled).

    python benchmarks/probes/cold_timeline_probe.py [--runs 2] [--delay 0,300] [--primed]

`--primed`: ptxpy's cache folder is empty but for the dataclass code cache (ptxpy/
_dataclass_code.py), written first by a process that only imports the compiler, as on a machine
where ptxpy ran before but never met this kernel.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples")

CODE = r'''
import json, os, sys, threading, time
T0 = time.perf_counter()
events = []
def mark(what):
    at = round((time.perf_counter() - T0) * 1e3, 2)
    events.append((at, threading.current_thread().name, what))
gaps = []
def sampler():
    last = time.perf_counter()
    while not done:
        time.sleep(0.001)
        now = time.perf_counter()
        if now - last > 0.004:
            gaps.append((round((last - T0) * 1e3, 1), round((now - last) * 1e3, 1)))
        last = now
done = False
threading.Thread(target=sampler, daemon=True, name="sampler").start()
sys.path.insert(0, sys.argv[1])
delay = float(sys.argv[2]) / 1e3
mark("start")
import jax, jax.numpy as jnp
mark("jax imported")
jax.config.update("jax_compilation_cache_dir", os.environ["BENCH_JAX_CACHE"])
import ptxpy
from ptxpy import api
from ptxpy.transpiler import driver
mark("ptxpy imported")
def timed(owner, name):
    original = getattr(owner, name)
    def wrapper(*args, **kwargs):
        mark(name + " begins")
        try:
            return original(*args, **kwargs)
        finally:
            mark(name + " ends")
    setattr(owner, name, wrapper)
for name in ("_load_compiler", "_import_runtime"):
    timed(api, name)
for name in ("import_stages", "transpile"):
    timed(driver, name)
from saxpy import saxpy
mark("kernel decorated")
x = jnp.ones(1 << 20, jnp.float32).block_until_ready()
y = jnp.ones(1 << 20, jnp.float32).block_until_ready()
mark("arrays made")
time.sleep(delay)
running = {part: api._preloading(part) for part in ("compiler", "runtime")}
mark("call begins, preloads running: %s" % running)
kernel = saxpy.compiled(x, y, 2.0)
mark("kernel compiled")
out = jax.block_until_ready(saxpy(x, y, 2.0))
mark("call ends")
assert float(out[0]) == 3.0
done = True
time.sleep(0.005)
print(json.dumps({"events": sorted(events), "gaps": sorted(gaps, key=lambda g: -g[1])[:12]}))
'''

PRIME = "import ptxpy; from ptxpy.transpiler import driver; driver.import_stages()"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--delay", default="0,300", help="ms between the arrays and the call")
    ap.add_argument("--primed", action="store_true", help="the dataclass code cache written first")
    a = ap.parse_args()
    for run in range(a.runs):
        for delay in a.delay.split(","):
            env = dict(os.environ, PTXPY_CACHE_DIR=tempfile.mkdtemp(),
                       BENCH_JAX_CACHE=tempfile.mkdtemp())
            if a.primed:
                subprocess.run([sys.executable, "-c", PRIME], env=env, check=True, timeout=120)
            done = subprocess.run([sys.executable, "-c", CODE, EXAMPLES, delay], env=env,
                                  capture_output=True, text=True, timeout=120)
            print(f"== run {run + 1}, delay {delay} ms, primed {a.primed}, exit {done.returncode}")
            if done.returncode != 0:
                print(done.stderr[-3000:])
                continue
            result = json.loads(done.stdout.strip().splitlines()[-1])
            for at, thread, what in result["events"]:
                print(f"{at:9.2f}  {thread:26} {what}")
            print("  longest stretches without the sampler (start ms, length ms):",
                  result["gaps"])


if __name__ == "__main__":
    main()
