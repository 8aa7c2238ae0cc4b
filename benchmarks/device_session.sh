#!/usr/bin/env bash
# Everything a GPU session checks, in one command, most important first; each step's output
# goes to $OUT/<step>.txt (and JSON where the tool writes one), so a step cut short by the time
# limit still leaves the earlier ones. Run from the repository root on the device:
#
#     OUT=/some/dir bash benchmarks/device_session.sh [STEP ...]
#
# Steps: gpu-tests kernel-tests sanitizer kernels ab launch registers (default: all, in order),
# and on demand: sanitizer-rows (compute-sanitizer on the row examples, every launch shape),
# variants (benchmarks/variants.py), launch-host (where a chain call's host time goes),
# graph-probe (the CUDA graphs XLA builds for a chain, and their launch cost),
# ncu-matmul (stall reasons of ptxpy's and Triton's matmul), math (the math library: tests,
# bits against the simulator, throughput; MATH_FUNCTIONS=a,b to name some).
# All of them take longer than one device call may (10 minutes): name a few steps per call.
set -u
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
steps=${*:-"gpu-tests kernel-tests sanitizer kernels ab launch registers"}
mkdir -p "$OUT/ab-matmul" "$OUT/ab-passes"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > "$OUT/card.txt" 2>&1
git rev-parse HEAD > "$OUT/commit.txt" 2>/dev/null || true

run() {   # run STEP COMMAND...: time it, keep its output, go on whatever it returns
    local step=$1; shift
    local start=$SECONDS
    echo "== $step: $*" | tee -a "$OUT/steps.txt"
    "$@" > "$OUT/$step.txt" 2>&1
    echo "== $step: exit $? after $((SECONDS - start)) s" | tee -a "$OUT/steps.txt"
}

for step in $steps; do
    case $step in
        gpu-tests)    run gpu-tests python3 -m pytest -q -m gpu tests ;;
        kernel-tests) run kernel-tests env PTXPY_TEST_DEVICE=gpu python3 -m pytest -q \
                          tests/test_kernels.py tests/test_gpu_language.py ;;
        sanitizer)    run sanitizer-memcheck compute-sanitizer --tool memcheck \
                          python3 examples/prefix_scan.py --size 100000
                      run sanitizer-racecheck compute-sanitizer --tool racecheck \
                          python3 examples/prefix_scan.py --size 100000 ;;
        sanitizer-rows)   # about 80 s (memcheck) and 250 s (racecheck)
                      run sanitizer-rows-memcheck bash benchmarks/sanitize_rows.sh memcheck
                      run sanitizer-rows-racecheck bash benchmarks/sanitize_rows.sh racecheck ;;
        kernels)      run kernels python3 benchmarks/kernels.py --out "$OUT" ;;
        ab)           # two groups that each fit a call: the matmul and row variants, then the passes
                      run ab-matmul env OUT="$OUT/ab-matmul" python3 benchmarks/ab_compiler.py \
                          --variants no-mad-wide join-existing matmul-unroll-2 matmul-unroll-16 \
                          --only matmul rms_norm_warp
                      run ab-passes env OUT="$OUT/ab-passes" python3 benchmarks/ab_compiler.py \
                          --variants no-speculate speculate-wide no-hoist no-strength \
                          --only prefix_scan rms_norm softmax layer_norm sum transpose ;;
        math)         # the math library on the GPU: its tests, bits against the simulator, cost
                      fns=${MATH_FUNCTIONS:-}
                      run math-tests env PTXPY_TEST_DEVICE=gpu python3 -m pytest -q tests/test_math_accuracy.py
                      run math-compare python3 benchmarks/math_accuracy.py --compare ${fns:+--functions $fns}
                      run math-throughput python3 benchmarks/math_accuracy.py --throughput ${fns:+--functions $fns} ;;
        launch)       run launch python3 benchmarks/launch.py --json "$OUT/launch.json" --only chain ;;
        variants)     run variants env OUT="$OUT" python3 benchmarks/variants.py --rounds 2 ;;
        graph-probe)  run graph-probe python3 benchmarks/graph_probe.py --out "$OUT/graph-probe" ;;
        launch-host)  run launch-host python3 benchmarks/launch.py --json "$OUT/launch-host.json" \
                          --only "host side" ;;
        ncu-matmul)   metrics="launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active"
                      metrics+=",smsp__inst_executed.sum,smsp__inst_executed_pipe_fma.sum"
                      metrics+=",smsp__issue_active.avg.pct_of_peak_sustained_active"
                      metrics+=",l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
                      metrics+=",l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
                      metrics+=",regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio"
                      run ncu-matmul-ptxpy ncu -k regex:matmul -c 1 --metrics "$metrics" \
                          python3 examples/matmul.py --size 4096
                      run ncu-matmul-triton ncu --profile-from-start off -c 1 --metrics "$metrics" \
                          python3 benchmarks/triton_matmul_once.py ;;
        registers)    run registers python3 benchmarks/registers.py --json "$OUT/registers.json" ;;
        *)            echo "unknown step $step" | tee -a "$OUT/steps.txt" ;;
    esac
done
