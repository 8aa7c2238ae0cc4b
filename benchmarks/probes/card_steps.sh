# Sourced by the card scripts: OUT (made), card.txt, and `step NAME SECONDS COMMAND...`, which
# runs the command with a time limit, keeps its output in $OUT/NAME.txt and its exit status
# and last lines in $OUT/steps.txt.
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/card.txt" 2>&1
step() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$OUT/steps.txt"
    timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1
    echo "== $name: exit $?" >> "$OUT/steps.txt"
    tail -3 "$OUT/$name.txt" >> "$OUT/steps.txt"
}
