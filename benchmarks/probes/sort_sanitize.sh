#!/bin/bash
# compute-sanitizer (memcheck, racecheck) on examples/radix_sort.py's three sorts of N f32 keys
# (default 12289: three whole tiles of 4096 keys and one key more, so that every pass looks
# back over several tiles and its last tile is partial), each checked against NumPy (GPU).
#   OUT=DIR bash benchmarks/probes/sort_sanitize.sh [N]
export XLA_PYTHON_CLIENT_PREALLOCATE=false
N=${1:-12289}
RUN="import sys, numpy as np, jax.numpy as jnp
sys.path.insert(0, 'examples')
import radix_sort as r
host = np.random.default_rng(0).standard_normal($N).astype(np.float32)
host[::7] = host[3]     # ties: the argsort and the pairs must keep their order
x = jnp.asarray(host)
order = np.argsort(host, kind='stable')
np.testing.assert_array_equal(np.asarray(r.radix_sort(x)), np.sort(host))
np.testing.assert_array_equal(np.asarray(r.radix_argsort(x)), order)
values = np.arange($N, dtype=np.int32)
keys, moved = r.sort_pairs(x, jnp.asarray(values))
np.testing.assert_array_equal(np.asarray(moved), values[order])
print('checked')"
for tool in memcheck racecheck; do
    timeout ${SANITIZE_TIMEOUT:-200} compute-sanitizer --tool $tool --report-api-errors no python3 -c "$RUN" \
        > "$OUT/sanitize-$tool.txt" 2>&1
    echo "$tool rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|checked" "$OUT/sanitize-$tool.txt"
done
