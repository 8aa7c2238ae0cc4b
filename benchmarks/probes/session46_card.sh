#!/bin/bash
# Session 46's card call: the GPU tests of register bounds, setmaxnreg and tensor maps in the C
# FFI handler, the launch cost of a TMA kernel (C handler on and off), and the warp-specialised
# matmul with setmaxnreg. Writes everything under $OUT.
set -u
export XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
PTXPY_TEST_DEVICE=gpu timeout 150 python3 -m pytest -q -p no:cacheprovider \
    tests/test_register_bounds.py tests/test_native_handler.py > "$OUT/tests-a.txt" 2>&1
echo "tests-a rc $?" >> "$OUT/tests-a.txt"
PTXPY_TEST_DEVICE=gpu timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_tma.py \
    > "$OUT/tests-tma.txt" 2>&1
echo "tests-tma rc $?" >> "$OUT/tests-tma.txt"
timeout 45 python3 benchmarks/probes/tma_launch_probe.py > "$OUT/launch-c.txt" 2>&1
PTXPY_NATIVE_HANDLER=0 timeout 45 python3 benchmarks/probes/tma_launch_probe.py > "$OUT/launch-python.txt" 2>&1
timeout 150 python3 benchmarks/probes/tma_ws_probe.py 2048 4096 8192 > "$OUT/ws.txt" 2>&1
echo "ws rc $?" >> "$OUT/ws.txt"
tail -3 "$OUT"/tests-a.txt "$OUT"/tests-tma.txt; cat "$OUT"/launch-*.txt "$OUT/ws.txt"
