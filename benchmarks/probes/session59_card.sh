#!/bin/bash
# Session 59's card run (BENCHMARKS.md, session 59): the GPU suite, then the kernels of this
# session's new tests run on the card itself (PTXPY_TEST_DEVICE=gpu: tests/kernel_harness.py
# launches the same PTX there instead of the simulator). Results under $OUT.
HERE=$(dirname "$0")
source "$HERE/card_steps.sh"
step pyc 60 python3 -c "import ptxpy; from ptxpy.transpiler import driver; driver.import_stages(); import ptxpy.runtime.launch, ptxpy.runtime.executables, jax"
step gpu_tests 330 python3 -m pytest -q -p no:cacheprovider -m gpu tests/
step new_kernels_on_gpu 150 env PTXPY_TEST_DEVICE=gpu python3 -m pytest -q -p no:cacheprovider \
    tests/test_kernels.py tests/test_edge_semantics.py -k "index_once or evaluate_their_operand_once \
    or shape_unpacks or python_s_weak or log_with_a_base or half_types or floor_division or casts"
