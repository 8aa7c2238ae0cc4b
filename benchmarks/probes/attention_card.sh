#!/usr/bin/env bash
# The card run for examples/attention.py (mma.sync) and examples/attention_wgmma.py: the
# examples on the GPU (d 64 and 128), their tests, ptxas's report and SASS opcode counts, the
# tile-shape probe beside cuDNN, XLA and Pallas, compute-sanitizer. From the repository root on
# the device: OUT=dir bash benchmarks/probes/attention_card.sh [probe arguments]
set -u
source "$(dirname "$0")/card_steps.sh"
step example 240 bash -c "for e in attention attention_wgmma; do python3 examples/\$e.py && python3 examples/\$e.py --head-dim 128; done"
step tests-gpu 120 env PTXPY_TEST_DEVICE=gpu python3 -m pytest -q -p no:cacheprovider tests/test_examples.py -k attention
step sass 120 bash -c "
python3 -c \"
import sys; sys.path.insert(0, 'examples')
import attention, attention_wgmma, jax.numpy as jnp
for d in (64, 128):
    q = jnp.zeros((1, 256, 1, d), jnp.bfloat16)
    open(f'$OUT/attention_{d}.ptx', 'w').write(attention.attention_kernel.ptx(q, q, q, HEAD=d))
    open(f'$OUT/attention_wgmma_{d}.ptx', 'w').write(attention_wgmma.attention_wgmma_kernel.ptx(q, q, q, HEAD=d))
\" && for f in attention_64 attention_128 attention_wgmma_64 attention_wgmma_128; do
python3 benchmarks/probes/sass_histogram.py $OUT/\$f.ptx; done"
step probe 400 python3 benchmarks/probes/attention_probe.py --json "$OUT/probe.json" "$@"
for e in attention attention_wgmma; do
step memcheck-$e 90 env XLA_PYTHON_CLIENT_PREALLOCATE=false compute-sanitizer --tool memcheck --report-api-errors no python3 examples/$e.py --seq 256 --batch 1 --heads 2 --check-only
step racecheck-$e 120 env XLA_PYTHON_CLIENT_PREALLOCATE=false compute-sanitizer --tool racecheck --report-api-errors no python3 examples/$e.py --seq 256 --batch 1 --heads 1 --check-only
done
cat "$OUT/steps.txt"
