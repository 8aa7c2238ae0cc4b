#!/bin/bash
# On the device: the backend's GPU checks after a change (docs/design.md, "Testing").
#   bash benchmarks/probes/gpu_check.sh FIRST_SEED [SECONDS] [MISMATCHES.txt]
# 1. which of the programs in MISMATCHES.txt (an earlier run's) still differ on the card;
# 2. the edge, kernel and GPU-language tests on the card;
# 3. random programs on the card: 14 processes, seeds FIRST_SEED.., SECONDS each (at most about
#    270 with a recheck, so that the whole check fits the device's 10-minute command), with
#    DIFF_FLAGS passed on to test_differential.py (DIFF_FLAGS=--memory: programs with a scratch
#    array; --warp: with warp functions; both may be given).
# Writes under $OUT: recheck.txt, tests_device.txt, diff-all.txt (with "# diff-SEED.txt" lines,
# the format reduce_gpu.py reads).
seed=${1:?first seed}; seconds=${2:-250}; old=$3
if [ -n "$old" ]; then
  timeout 100 python benchmarks/probes/reduce_gpu.py "$old" /tmp/reduced --jobs 14 > $OUT/recheck.txt 2>&1
  grep "^program" $OUT/recheck.txt
fi
PTXPY_TEST_DEVICE=gpu timeout 170 python -m pytest -q -p no:cacheprovider tests/test_edge_semantics.py \
  tests/test_kernels.py tests/test_gpu_language.py > $OUT/tests_device.txt 2>&1
tail -3 $OUT/tests_device.txt
for s in $(seq $seed $((seed + 13))); do
  PTXPY_TEST_DEVICE=gpu timeout $seconds python tests/test_differential.py 100000 $s $DIFF_FLAGS > /tmp/diff-$s.txt 2>&1 &
done
wait
for s in $(seq $seed $((seed + 13))); do echo "# diff-$s.txt"; cat /tmp/diff-$s.txt; done > $OUT/diff-all.txt
python3 - "$OUT/diff-all.txt" <<'PY'
import re, sys
runs = open(sys.argv[1]).read().split("# diff-")[1:]
done = sum(max([int(n) for n in re.findall(r"^\.\.\. (\d+) programs", r, flags=re.M)] or [0]) for r in runs)
bad = sum(len(re.findall(r"^--- program", r, flags=re.M)) for r in runs)
print(f"about {done} programs (counted to the last progress line), {bad} mismatches")
PY
