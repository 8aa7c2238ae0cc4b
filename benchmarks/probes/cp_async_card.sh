#!/usr/bin/env bash
# Session 39's card run for ptxpy.cp_async and ptxpy.ldmatrix: the tests on the GPU, the example, the matmul
# variants beside XLA and the register-prefetching kernel, compute-sanitizer. From the
# repository root on the device: OUT=dir bash benchmarks/probes/cp_async_card.sh [BASELINE.py]
set -u
source "$(dirname "$0")/card_steps.sh"
step tests-gpu 90 env PTXPY_TEST_DEVICE=gpu python3 -m pytest -q -p no:cacheprovider tests/test_cp_async.py tests/test_ldmatrix.py
step example 90 bash -c "python3 examples/matmul_tf32.py && python3 examples/matmul_bf16.py"
step probe 140 python3 benchmarks/probes/matmul_async_probe.py ${1:+--baseline "$1"} --json "$OUT/probe.json"
step tests-jax 60 python3 -m pytest -q -p no:cacheprovider tests/test_cp_async.py tests/test_ldmatrix.py tests/test_mma.py -k "jax or refus or block"
step memcheck 60 compute-sanitizer --tool memcheck --report-api-errors no python3 examples/matmul_tf32.py --size 512
step racecheck 80 compute-sanitizer --tool racecheck --report-api-errors no python3 examples/matmul_tf32.py --size 256
cat "$OUT/steps.txt"
