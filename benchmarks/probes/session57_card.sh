#!/bin/bash
# Session 57's first card run: where a cold first call's time goes when the preloads are still
# running (cold_timeline_probe.py, with the dataclass code cache empty and primed), the
# GPU tests (the whole suite: 78bdb94 had not run on a card).
# Results under $OUT.
HERE=$(dirname "$0")
source "$HERE/card_steps.sh"
# bytecode caches first, as `pip install` leaves them (the cache folder thrown away)
step pyc 60 env PTXPY_CACHE_DIR=$(mktemp -d) python3 -c "import ptxpy; from ptxpy.transpiler import driver; driver.import_stages(); import ptxpy.runtime.launch, ptxpy.runtime.executables, jax"
step timeline_cold 150 python3 benchmarks/probes/cold_timeline_probe.py --runs 1 --delay 0,300
step timeline_primed 100 python3 benchmarks/probes/cold_timeline_probe.py --runs 1 --delay 0 --primed
step gpu_tests 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/
