#!/usr/bin/env bash
# One device call that exercises the whole harness on the H200 (logs and run files go to $OUT; nothing is
# written to datasets/runs). Each step has its own time limit so one failure cannot eat the others' time.
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/smoke}; mkdir -p "$OUT"
LOG="$OUT/smoke.log"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv
  python3 -c "import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)"; } 2>&1 | tee "$LOG"
echo "== pytest -m gpu tests/profiler" | tee -a "$LOG"
timeout 90 python3 -m pytest -q -m gpu -s -n 0 -p no:cacheprovider tests/profiler 2>&1 | tail -n 80 | tee -a "$LOG"
echo "== run 1: baseline vs baseline, official, cold, with probes" | tee -a "$LOG"
timeout 110 python3 -m profiler run --plan baseline --plan baseline --shapes official --out "$OUT/smoke.json" 2>&1 \
  | tr '\r' '\n' | grep -v '^shapes:\|it/s\]$' | tee -a "$LOG"
echo "== run 2 (warm): baseline vs baseline, official, cold, no probes" | tee -a "$LOG"
timeout 50 python3 -m profiler run --plan baseline --plan baseline --shapes official --no-probes \
  --out "$OUT/smoke2.json" 2>&1 | tr '\r' '\n' | grep -v 'it/s\]$' | tail -n 45 | tee -a "$LOG"
echo "== run 3: stream mode, decode/verify official, no probes, 0.5 s cap" | tee -a "$LOG"
timeout 30 python3 -m profiler run --plan baseline --plan baseline --shapes official --mode stream --no-probes \
  --max-seconds-per-shape 0.5 --out "$OUT/stream.json" 2>&1 | tr '\r' '\n' | grep -v 'it/s\]$' | tail -n 40 | tee -a "$LOG"
ls -la "$OUT"
