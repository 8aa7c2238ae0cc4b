#!/bin/bash
# Session 55's card run: the warm start's first call broken down, the exit's keeping cost, GPU
# tests of the runtime at this commit, launch.py's first-call rows. Results under $OUT.
HERE=$(dirname "$0")
source "$HERE/card_steps.sh"
step warm_start 150 python3 benchmarks/probes/warm_start_probe.py --runs 5
step warm_start_nokeep 100 python3 benchmarks/probes/warm_start_probe.py --runs 3 --no-keep
step keep 60 python3 benchmarks/probes/executable_keep_probe.py
step first_warm 100 python3 benchmarks/probes/first_call_probe.py --warm --only ptxpy --top 70
step gpu_tests 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_api.py \
    tests/test_runtime.py tests/test_vmap.py tests/test_native_handler.py
step executables 120 python3 -m pytest -q -p no:cacheprovider tests/test_executables.py
step eager_split 100 python3 benchmarks/probes/eager_split_probe.py
step launch_first 200 python3 benchmarks/launch.py --only "first call, caches"
