#!/bin/bash
# Session 47's card call: thread-block clusters on the H100 (the GPU tests, the example, the
# sanitizers on it, the cluster RMS norm beside one block a row and XLA), and the chained
# launch beside Pallas (issue 4). Writes everything under $OUT.
set -u
export XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
PTXPY_TEST_DEVICE=gpu timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_cluster.py \
    > "$OUT/tests-cluster.txt" 2>&1
echo "tests-cluster rc $?" >> "$OUT/tests-cluster.txt"
timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_examples.py \
    -k "rms_norm_cluster" > "$OUT/tests-example.txt" 2>&1
echo "tests-example rc $?" >> "$OUT/tests-example.txt"
for tool in memcheck racecheck; do
    timeout 120 compute-sanitizer --tool $tool python3 examples/rms_norm_cluster.py --rows 4 \
        --cols 65536 > "$OUT/sanitizer-$tool.txt" 2>&1
    echo "$tool rc $?" >> "$OUT/sanitizer-$tool.txt"
done
timeout 150 python3 benchmarks/probes/cluster_probe.py --json "$OUT/cluster.json" \
    > "$OUT/cluster.txt" 2>&1
echo "cluster rc $?" >> "$OUT/cluster.txt"
for n in 4096 8192; do
    timeout 100 python3 examples/matmul_tma_cluster.py --size $n >> "$OUT/matmul.txt" 2>&1
    echo "matmul $n rc $?" >> "$OUT/matmul.txt"
done
timeout 100 compute-sanitizer --tool memcheck python3 examples/matmul_tma_cluster.py --size 512 \
    > "$OUT/sanitizer-matmul.txt" 2>&1
echo "memcheck rc $?" >> "$OUT/sanitizer-matmul.txt"
timeout 150 python3 benchmarks/launch.py --only "graphs on" > "$OUT/chain.txt" 2>&1
echo "chain rc $?" >> "$OUT/chain.txt"
tail -3 "$OUT"/tests-*.txt; tail -4 "$OUT"/sanitizer-*.txt; cat "$OUT/cluster.txt" "$OUT/matmul.txt" "$OUT/chain.txt"
