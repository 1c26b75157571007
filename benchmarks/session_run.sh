#!/usr/bin/env bash
# The benchmark runs behind docs/results.md, in order, on a quiet machine (nothing else running).
# Each step resumes where it stopped; re-run the script after a kill.
set -eu
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
TASKS="resnet50/fused_conv2d12_subtract7_divide7_multiply7_add13_relu7,mobilenetv2/fused_conv2d4_subtract3_divide3_multiply3_add6_tir_clip2,r3d18/fused_conv3d9_subtract3_divide3_multiply3_add10_relu3,bert/fused_matmul_add,bert/matmul1,bert/layer_norm"
"$PY" benchmarks/run.py --suite subgraphs --tasks "$TASKS" --trials 32 --out benchmarks/results/run
"$PY" benchmarks/report.py --run benchmarks/results/run --budgets 16,32
"$PY" benchmarks/adaptation.py --tasks 3 --trials 32 --steps 4
"$PY" benchmarks/run.py --suite gemm --trials 32 --out benchmarks/results/gemm
