#!/bin/bash
# Session 56's second card run: what the executables' preload sees (prefetch_debug.py), the
# warm start with and without it (alternated), and launch.py's first calls. Results under $OUT.
HERE=$(dirname "$0")
source "$HERE/card_steps.sh"
step debug 60 python3 benchmarks/probes/prefetch_debug.py
step warm_start 150 python3 benchmarks/probes/warm_start_probe.py --runs 4 --prefetch-ab
step first_call 90 python3 benchmarks/launch.py --only "first call, caches"
step first_call2 90 python3 benchmarks/launch.py --only "first call, caches"
