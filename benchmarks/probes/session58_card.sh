#!/bin/bash
# Session 58's card run (BENCHMARKS.md, session 58): an eager call's Python before and after the
# fast path that calls the plan's jitted FFI call straight (eager_split_probe.py, alternated:
# new, old, the whole GPU suite, old, new), then launch.py's eager rows. Results under
# $OUT. The old files are not in the repository: make them first (the commit before the
# change); if git ignores the folder, name it in the device call's carry beside .whl:
#   mkdir -p benchmarks/probes/ab_old
#   git show 6bed69b:ptxpy/api.py > benchmarks/probes/ab_old/api.py
#   git show 6bed69b:runtime/launch.py > benchmarks/probes/ab_old/launch.py
HERE=$(dirname "$0")
source "$HERE/card_steps.sh"
cp ptxpy/api.py /tmp/api_new.py; cp runtime/launch.py /tmp/launch_new.py
use_new() { cp /tmp/api_new.py ptxpy/api.py; cp /tmp/launch_new.py runtime/launch.py; }
use_old() { cp "$HERE/ab_old/api.py" ptxpy/api.py; cp "$HERE/ab_old/launch.py" runtime/launch.py; }
step pyc 60 python3 -c "import ptxpy; from ptxpy.transpiler import driver; driver.import_stages(); import ptxpy.runtime.launch, ptxpy.runtime.executables, jax"
use_new; step eager_new1 120 python3 benchmarks/probes/eager_split_probe.py
use_old; step eager_old1 120 python3 benchmarks/probes/eager_split_probe.py
use_new
step gpu_tests 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/
use_old; step eager_old2 120 python3 benchmarks/probes/eager_split_probe.py
use_new; step eager_new2 120 python3 benchmarks/probes/eager_split_probe.py
step launch_eager 90 python3 benchmarks/launch.py --only eager
