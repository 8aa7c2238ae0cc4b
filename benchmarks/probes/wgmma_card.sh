#!/usr/bin/env bash
# Session 40's card run for ptxpy.wgmma: the tests on the GPU (with session 39's cp_async and
# ldmatrix ones), the examples, the wgmma matmul variants beside XLA and the mma.sync example,
# ptxas's report on the example, compute-sanitizer. From the repository root on the device:
# OUT=dir bash benchmarks/probes/wgmma_card.sh
set -u
source "$(dirname "$0")/card_steps.sh"
step tests-gpu 150 env PTXPY_TEST_DEVICE=gpu python3 -m pytest -q -p no:cacheprovider tests/test_wgmma.py tests/test_cp_async.py tests/test_ldmatrix.py
step example 120 bash -c "python3 examples/matmul_wgmma.py && python3 examples/matmul_tf32.py && python3 examples/matmul_bf16.py"
step ptxas 30 bash -c "ptxpy transpile examples/matmul_wgmma.py -o $OUT/ptx && ptxas -arch=sm_90a -v $OUT/ptx/matmul_wgmma.ptx -o /dev/null"
step probe 300 python3 benchmarks/probes/wgmma_probe.py --json "$OUT/probe.json"
step memcheck 60 compute-sanitizer --tool memcheck --report-api-errors no python3 examples/matmul_wgmma.py --size 512
step racecheck 90 compute-sanitizer --tool racecheck --report-api-errors no python3 examples/matmul_wgmma.py --size 256
cat "$OUT/steps.txt"
