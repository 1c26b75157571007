#!/usr/bin/env bash
# The background collection run of the data issue: each source profile gets a budget of new trials
# per round, interleaved over the training tasks, then the next round raises the per-task target.
# Resumable: re-running continues where the databases stop. Log: data/records/collect.log
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
for trials in 16 32 48 64; do
  for profile in host-avx2-1c host-sse42-2c host-sse42-1c; do
    "$PY" -m tvm_tensorgpt collect --profile "$profile" --tasks training --trials "$trials" --chunk 16 \
      --budget "${BUDGET:-1500}" --data-dir data/records
  done
done
