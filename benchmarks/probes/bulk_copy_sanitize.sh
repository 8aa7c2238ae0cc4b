#!/bin/bash
# compute-sanitizer (memcheck, racecheck) on the bulk-copy probe's kernels, small inputs (GPU).
#   OUT=DIR bash benchmarks/probes/bulk_copy_sanitize.sh
export XLA_PYTHON_CLIENT_PREALLOCATE=false
RUN='import sys, numpy as np, jax.numpy as jnp
sys.path.insert(0, "benchmarks/probes")
import bulk_copy_probe as b
x = jnp.asarray(np.random.default_rng(0).standard_normal((300, 8192)).astype(np.float32))
for f in (b.bulk, b.bulk_loads):
    np.testing.assert_array_equal(np.asarray(f(x)), 2 * np.asarray(x))
print("checked")'
for tool in memcheck racecheck; do
    timeout 200 compute-sanitizer --tool $tool --report-api-errors no python3 -c "$RUN" \
        > "$OUT/sanitize-$tool.txt" 2>&1
    echo "$tool rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|checked" "$OUT/sanitize-$tool.txt"
done
