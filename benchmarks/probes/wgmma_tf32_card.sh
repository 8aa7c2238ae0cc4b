#!/usr/bin/env bash
# Session 40's second card run: the wgmma tests again (after isel's accumulator registers),
# the tf32 wgmma example and its variants beside XLA's f32 dot and the mma.sync example,
# memcheck. From the repository root on the device: OUT=dir bash benchmarks/probes/wgmma_tf32_card.sh
set -u
source "$(dirname "$0")/card_steps.sh"
step tests-gpu 120 env PTXPY_TEST_DEVICE=gpu python3 -m pytest -q -p no:cacheprovider tests/test_wgmma.py
step examples 150 bash -c "python3 examples/matmul_tf32_wgmma.py && python3 examples/matmul_wgmma.py"
step probe-tf32 240 python3 benchmarks/probes/wgmma_probe.py --tf32 --json "$OUT/probe-tf32.json"
step memcheck 60 compute-sanitizer --tool memcheck --report-api-errors no python3 examples/matmul_tf32_wgmma.py --size 512
cat "$OUT/steps.txt"
