#!/bin/bash
# Session 55's card run: GPU tests of the runtime at this commit, the exit's keeping cost, the
# warm start's first call broken down, launch.py's first-call rows. Results under $OUT.
HERE=$(dirname "$0")
source "$HERE/card_steps.sh"
step gpu_tests 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_api.py \
    tests/test_runtime.py tests/test_vmap.py tests/test_native_handler.py
step executables 120 python3 -m pytest -q -p no:cacheprovider tests/test_executables.py
step keep 60 python3 benchmarks/probes/executable_keep_probe.py
step first_warm 120 python3 benchmarks/probes/first_call_probe.py --warm --only ptxpy --top 70
step first_warm_nokeep 120 env PTXPY_EXECUTABLE_CACHE=0 python3 benchmarks/probes/first_call_probe.py --warm --only ptxpy --top 50
step launch_first 200 python3 benchmarks/launch.py --only "first call, caches"
