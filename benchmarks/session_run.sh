#!/usr/bin/env bash
# The benchmark runs behind docs/results.md, in order, on a quiet machine (nothing else running).
# Each step resumes where it stopped (finished cells are skipped); re-run the script after a kill.
#  1. every method on the 14 held-out subgraphs, 64 trials (16 and 32 are prefixes of each curve),
#     seeds 1-3 (seed-major: a cut run has whole seeds), then every cell's best 3 schedules measured
#     again in one batch (remeasure.py; the rows are compared on those values);
#  2. the Ansor@1000 reference in the same harness, with TVM's default 64 candidates per round
#     (each evolutionary round samples and evolves a 2048 population: fewer, larger rounds);
#  3. the GEMM roofline line (made 2026-12-02 at 32 trials); 4. ResNet-18 end to end, 16 trials for
#     each of its 19 tasks, Ansor vs TensorGPT; 5. the report.
set -eu
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
"$PY" benchmarks/run.py --suite subgraphs --trials 64 --seeds 1,2,3 --out benchmarks/results/subgraphs
"$PY" benchmarks/remeasure.py --run benchmarks/results/subgraphs
"$PY" benchmarks/run.py --suite subgraphs --methods ansor --trials 1000 --per-round 64 --out benchmarks/results/ansor1000
"$PY" benchmarks/run.py --suite gemm --trials 32 --out benchmarks/results/gemm
"$PY" benchmarks/run.py --suite networks --tasks resnet18 --methods ansor,tensorgpt --trials 304 --out benchmarks/results/networks
"$PY" benchmarks/report.py
