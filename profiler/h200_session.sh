#!/usr/bin/env bash
# The device session that produced the committed H200 runs (datasets/runs/<date>_nvidia-h200_*.json).
# Run from the repo root on the GPU host: OUT=/some/dir bash profiler/h200_session.sh
# Order: tune (writes the best plan) -> paired baseline/seed036/best sweep with probes -> two back-to-back
# baseline-vs-baseline sweeps over official + nearby shapes (repeatability check) -> best vs baseline on
# nearby shapes (generalization) -> GPU tests. Each step has its own time limit so one failure cannot eat
# the others' time. REPEAT="" skips the repeatability sweeps; pass PROJLAB_GIT_SHA=$(git rev-parse HEAD)
# so run files record the commit (the device copy has no .git). Everything lands in $OUT (copied into datasets/runs by hand, never edited).
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT}; mkdir -p "$OUT"
D=$(date -u +%F); P="$OUT/${D}_nvidia-h200"; T=${TAG:+-$TAG}  # TAG=r2 → ..._tune-r2.json (names never reused)
LOG="$OUT/session.log"
step() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
clean() { tr '\r' '\n' | grep -v 'it/s\]$' | tee -a "$LOG"; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv
  python3 -c "import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)"; } 2>&1 | tee "$LOG"
step "tune (all families, official shapes)"
timeout ${TUNE_S:-270} python3 -m profiler tune --shapes official --out-plan kernels/plans/best.json \
  --out-run "${P}_tune$T.json" --budget-s ${TUNE_BUDGET_S:-240} 2>&1 | clean | tail -n 60
cp kernels/plans/best.json "$OUT/best.json" 2>/dev/null
step "paired sweep: baseline vs seed036 vs best, official, cold, probes"
timeout 120 python3 -m profiler run --plan baseline --plan seed036 --plan kernels/plans/best.json --shapes official \
  --label baseline-seed036-best$T --out "${P}_baseline-seed036-best$T.json" 2>&1 | clean | tail -n 45
for ab in ${REPEAT-a b}; do
  step "repeatability sweep $ab: baseline vs baseline, official + nearby, cold, probes"
  timeout 70 python3 -m profiler run --plan baseline --plan baseline --shapes all --label "baseline-vs-baseline-$ab$T" \
    --out "${P}_baseline-vs-baseline-$ab$T.json" 2>&1 | clean | tail -n 12
done
step "generalization: baseline vs best, nearby shapes, no probes"
timeout 50 python3 -m profiler run --plan baseline --plan kernels/plans/best.json --shapes nearby --no-probes \
  --label baseline-vs-best-nearby$T --out "${P}_baseline-vs-best-nearby$T.json" 2>&1 | clean | tail -n 12
if [ "${TEST_S:-0}" -gt 0 ]; then step "GPU tests"
timeout ${TEST_S} python3 -m pytest -q -m gpu -p no:cacheprovider tests/kernels tests/profiler 2>&1 | tail -n 30 | tee -a "$LOG"; fi
step done; ls -la "$OUT" | tee -a "$LOG"
