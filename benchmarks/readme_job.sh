#!/bin/bash
# README command 1 (after setup), timed, with the machine it ran on: its printed table is kept in
# benchmarks/results/readme_job/. Run it with nothing else on the machine.
#     bash benchmarks/readme_job.sh [TRIALS]   (default: the README's budget)
set -euo pipefail
cd "$(dirname "$0")/.."
TRIALS=${1:-48}
OUT=benchmarks/results/readme_job
mkdir -p "$OUT"
lscpu > "$OUT/lscpu.txt"
echo "command: .venv/bin/tensorgpt tune --model resnet18 --target host --trials $TRIALS" > "$OUT/output.txt"
echo "commit: $(git rev-parse --short HEAD), date: $(date -u +%FT%TZ)" >> "$OUT/output.txt"
mkdir -p logs
SECONDS=0
.venv/bin/tensorgpt tune --model resnet18 --target host --trials "$TRIALS" >> "$OUT/output.txt" 2> logs/readme_job.err
echo "command wall time: $SECONDS s" >> "$OUT/output.txt"
tail -n 12 "$OUT/output.txt"
