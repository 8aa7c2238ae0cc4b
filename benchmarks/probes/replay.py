"""Run one random program of test_differential again, on the card and in the simulator (device).

For a program that a run reports without its source (a CUDA error stops a run's process
from printing it, and every program after it fails too: the context is lost):

    python benchmarks/probes/replay.py SEED NUMBER [--memory] [--warp] [--atomic] [--loops] [--returns] [--vectors] [--exchange] [OUT_DIR]

`--source FILE` runs FILE's kernel `kern` (a cut-down form of the program, with its parameters)
on the program's inputs instead of the program itself.

Writes OUT_DIR/program-SEED-NUMBER.py and .ptx and prints where the results differ, or the
error; then, in a new process under `compute-sanitizer` when it is on the PATH, the card's run
alone, so that a memory error is named with its instruction and address.
"""
import os
import random
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))
sys.path.insert(0, HERE)

def program(seed, number, flags):
    from test_differential import FLAGS, gen_program

    draws = random.Random(f"{seed}:{number}")
    return gen_program(lambda lo, hi: draws.randint(lo, hi), *(flag in flags for flag in FLAGS))


def kernel_args(inputs, out_specs):
    """The launch arguments of a random program's PTX: each array with its extents, the
    outputs zeroed."""
    from test_differential import np_dtype

    args = []
    for arr in inputs:
        args += [arr, len(arr)]
    for _, t, shape in out_specs:
        args += [np.zeros(shape, np_dtype(t)), *shape]
    return args


def run_on(device, source, inputs, out_specs):
    from kernel_harness import Out
    from reduce_gpu import results
    from test_differential import np_dtype

    return results(source, list(inputs) + [Out(shape, np_dtype(t)) for _, t, shape in out_specs],
                   device)


def main(argv):
    from test_differential import FLAGS

    replacement = None
    if "--source" in argv:
        at = argv.index("--source")
        replacement, argv = argv[at + 1], argv[:at] + argv[at + 2:]
    flags = [a for a in argv[1:] if a in FLAGS]
    rest = [a for a in argv[1:] if a not in FLAGS and a != "--card-only"]
    seed, number = rest[0], int(rest[1])
    out_dir = rest[2] if len(rest) > 2 else "."
    source, reference, inputs, out_specs = program(seed, number, flags)
    if replacement:
        with open(replacement) as f:
            source = f.read()
    if "--card-only" in argv:
        run_on("gpu", source, inputs, out_specs)
        print("the card ran it without an error")
        return
    from kernel_harness import compile_source
    from test_differential import same_values

    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, f"program-{seed}-{number}")
    with open(stem + ".py", "w") as f:
        f.write(source)
    with open(stem + ".ptx", "w") as f:
        f.write(compile_source(source, "kern", arch="sm_90").ptx)
    expected = reference(inputs)
    simulated = run_on("", source, inputs, out_specs)
    try:
        card = run_on("gpu", source, inputs, out_specs)
    except AssertionError as exc:
        print(f"the card: {exc}")
        card = None
    for (name, ty, _), want, sim, got in zip(out_specs, expected, simulated,
                                             card or simulated):
        for label, values in (("simulator", sim), ("card", got)):
            bad = ~same_values(want, values, ty)
            if bad.any():
                where = tuple(int(v) for v in next(zip(*bad.nonzero())))
                print(f"{name}: {label} differs from the reference at {bad.sum()} places, first "
                      f"{where}: {values[where]!r}, not {want[where]!r}")
    if card is None and shutil.which("compute-sanitizer"):
        again = ["--source", replacement] if replacement else []
        done = subprocess.run(["compute-sanitizer", "--print-limit", "3", sys.executable,
                               __file__, seed, str(number), *flags, *again, "--card-only"],
                              capture_output=True, text=True)
        print(done.stdout[-6000:], done.stderr[-2000:])


if __name__ == "__main__":
    main(sys.argv)
