#!/usr/bin/env bash
# The data issue's collection run, resumable: every command stops at a total (--max-records) or a
# per-task target (--trials), so re-running the script continues where the databases stop.
# Source profiles round-robin in growing steps, then the held-out reference (Ansor-style:
# evolutionary search with TVM's default population and XGBoost, 1000 trials per held-out task).
# REFERENCE=0 skips the reference (sources only; it is measured on this machine's held-out profile, if it has one); STEPS sets the per-profile totals; CHUNK the
# trials per task per tuning call (one measured batch; larger amortises the workers' start-up).
# Progress: data/records/collect.log. Each command is recorded in its profile's provenance.json.
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
# This machine's profiles that are not held out (profiles name their machine; collect refuses others).
SOURCES=${SOURCES:-$("$PY" -c "from tvm_tensorgpt.hardware import host_profiles
from tvm_tensorgpt.data.split import is_heldout
print(' '.join(p.name for p in host_profiles() if not is_heldout(p) and '-native-' not in p.name))")}
# This machine's held-out profile (none: no reference is collected here).
HELDOUT=$("$PY" -c "from tvm_tensorgpt.data.split import heldout_host_of
from tvm_tensorgpt.hardware import this_machine
print(heldout_host_of(this_machine().key) or '')")
for total in ${STEPS:-1000 2000 3500 5000}; do
  for profile in $SOURCES; do
    "$PY" -m tvm_tensorgpt collect --profile "$profile" --tasks training --trials 64 --chunk "${CHUNK:-32}" \
      --max-records "$total" --data-dir data/records
  done
  [ "${REFERENCE:-1}" = 1 ] && [ -n "$HELDOUT" ] || continue
  "$PY" -m tvm_tensorgpt collect --profile "$HELDOUT" --tasks heldout --trials 1000 --chunk 64 \
    --population 2048 --max-records $((total / 2)) --data-dir data/reference
done
