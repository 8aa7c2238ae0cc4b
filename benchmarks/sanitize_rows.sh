#!/usr/bin/env bash
# compute-sanitizer on the row examples at one row length per launch shape:
#   OUT=DIR bash benchmarks/sanitize_rows.sh memcheck|racecheck
# RMS norm: 2048 / 12000 / 20000 columns run 128 / 256 / 512 threads per row from registers;
# softmax and layer norm: 4000 / 12000 run 256 / 512. Each example also runs its odd-length
# row and its longest row plus 4 (read twice). XLA's allocator is the platform's, so every
# buffer is its own allocation and memcheck sees an access past it.
tool=$1
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
export XLA_PYTHON_CLIENT_ALLOCATOR=platform
for spec in "rms_norm 2048" "rms_norm 12000" "rms_norm 20000" "softmax 4000" "softmax 12000" \
            "layer_norm 4000" "layer_norm 12000"; do
  set -- $spec
  log=$OUT/sanitizer-$tool-$1-$2.txt
  start=$(date +%s)
  timeout 150 compute-sanitizer --tool "$tool" --print-limit 200 \
      python3 "examples/$1.py" --rows 16 --cols "$2" > "$log" 2>&1
  echo "$tool $1 cols=$2 rc=$? $(( $(date +%s) - start ))s ::" \
       "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|match' "$log" | tr '\n' ' ')"
done
