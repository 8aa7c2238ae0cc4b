#!/bin/bash
# Session 55's card run: the warm start's first call broken down, the exit's keeping cost and
# the GPU tests of the runtime at this commit. Results under $OUT.
HERE=$(dirname "$0")
source "$HERE/card_steps.sh"
step warm_start 80 python3 benchmarks/probes/warm_start_probe.py --runs 3
step warm_start_nokeep 50 python3 benchmarks/probes/warm_start_probe.py --runs 2 --no-keep
step keep 30 python3 benchmarks/probes/executable_keep_probe.py
step gpu_tests 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_api.py \
    tests/test_runtime.py tests/test_vmap.py tests/test_native_handler.py
step executables 60 python3 -m pytest -q -p no:cacheprovider tests/test_executables.py
step eager_split 60 python3 benchmarks/probes/eager_split_probe.py
step first_call 90 python3 benchmarks/launch.py --only "first call, caches"
