#!/bin/bash
# Session 56's closing card run: every GPU test of the suite, the executables' and dataclass
# cache's tests, an example, the warm start with and without the executables' preload and
# launch.py's first calls, the eager split. Results under $OUT.
HERE=$(dirname "$0")
source "$HERE/card_steps.sh"
step gpu_tests 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/
step cpu_parts 60 python3 -m pytest -q -p no:cacheprovider tests/test_executables.py \
    tests/test_dataclass_code.py
step saxpy 30 python3 examples/saxpy.py
step warm_start 60 python3 benchmarks/probes/warm_start_probe.py --runs 2 --prefetch-ab
step first_call 50 python3 benchmarks/launch.py --only "first call, caches"
step eager_split 40 python3 benchmarks/probes/eager_split_probe.py
