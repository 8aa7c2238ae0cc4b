#!/bin/bash
# Session 56's card run: the GPU tests of the runtime, the warm start with and without its
# executables loaded ahead (alternated), launch.py's first calls, and a cold compile with and
# without the dataclass code cache. Results under $OUT.
HERE=$(dirname "$0")
source "$HERE/card_steps.sh"
step gpu_tests 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_api.py \
    tests/test_runtime.py tests/test_vmap.py tests/test_native_handler.py
step executables 90 python3 -m pytest -q -p no:cacheprovider tests/test_executables.py \
    tests/test_dataclass_code.py
step warm_start 120 python3 benchmarks/probes/warm_start_probe.py --runs 3 --prefetch-ab
step first_call 90 python3 benchmarks/launch.py --only "first call, caches"
cold() {   # a new process that imports ptxpy and transpiles examples/saxpy.py, 5 times
    for i in 1 2 3 4 5; do
        /usr/bin/time -f "%e" python3 -c 'import ptxpy; ptxpy.transpile(open("examples/saxpy.py").read(), "b.py")' 2>&1
    done | tr '\n' ' '; echo
}
export -f cold
step cold_compile 120 bash -c 'export PTXPY_CACHE_DIR=$(mktemp -d); cold > /dev/null;
  for r in 1 2 3; do echo -n "code cache: "; cold; echo -n "PTXPY_CACHE=0: "; PTXPY_CACHE=0 cold; done'
