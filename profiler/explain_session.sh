#!/usr/bin/env bash
# The device session behind the committed explain runs (datasets/runs/<date>_<card>_explain-*.json; the committed
# ones are an H200's). Files are named by the card that ran them (datasets.runfile.slug of GPU 0's name).
# Run from the repo root on the GPU host:
#   OUT=/some/dir PROJLAB_GIT_SHA=$(git rev-parse HEAD) BUDGET_S=270 bash profiler/explain_session.sh
# 1. dry run: baseline + best on two shapes, no probes — catches a broken setup cheaply and times one job;
# 2. baseline + best over the 30 official shapes, with probes, one Chrome trace per shape (kept in $OUT/traces);
# 3. seed036 the same way when the estimate from 1. still fits in BUDGET_S.
# Each step has a time limit; a run cut short keeps its flushed "partial" file. ncu reports and raw CSVs go to
# $OUT/keep (tarred at the end with the traces).
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
OUT=${OUT:?set OUT}; mkdir -p "$OUT"; BUDGET_S=${BUDGET_S:-270}
CARD=$(python3 -c "import torch; from datasets.runfile import slug; print(slug(torch.cuda.get_device_name(0)))") \
  || { echo "no CUDA device to name the files by" >&2; exit 1; }
D=$(date -u +%F); P="$OUT/${D}_${CARD}"; LOG="$OUT/session.log"; START=$(date +%s)
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }
step() { echo "== $(date -u +%T) (+$(( $(date +%s) - START )) s) $*" | tee -a "$LOG"; }
pack() { tar czf "$OUT/keep.tgz" --exclude='*.ncu-rep' -C "$OUT" keep 2>/dev/null; [ -d "$OUT/traces" ] && tar czf "$OUT/traces.tgz" -C "$OUT" traces; rm -rf "$OUT/keep" "$OUT/traces"; }
trap pack EXIT
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv; ncu --version | tail -n 1
  python3 -c "import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)"; } 2>&1 | tee -a "$LOG"

step "dry run: baseline + best at decode 16/router and verify 1/unpooler, no probes"
timeout 150 python3 -m profiler explain --plan baseline --plan best --shape 'decode 16/router' \
  --shape 'verify 1/unpooler' --no-probes --out "$OUT/dry.json" --keep "$OUT/keep/dry" 2>&1 | tee -a "$LOG" | tail -n 25
[ -f "$OUT/dry.json" ] || { step "dry run wrote no run file: stopping"; exit 1; }
# Seconds per shape (2 candidates) from the dry run's check and ncu passes, and the fixed start-up cost.
read PER FIXED < <(python3 - "$OUT/dry.json" "$(( $(date +%s) - START ))" <<'PY'
import json, sys
env = json.load(open(sys.argv[1]))["environment"]
per = (env.get("check_seconds", 0.0) + env.get("ncu_seconds", 0.0)) / 2
print(f"{per:.1f}", int(float(sys.argv[2]) - 2 * per))
PY
)
step "dry run: ~$PER s per shape of 2 candidates, ~$FIXED s fixed start-up; estimate for 30 shapes: $(python3 -c "print(round($FIXED + 30 * $PER + 15))") s; $(left) s left"

step "baseline + best, 30 official shapes, probes, traces"
timeout $(( $(left) - 5 )) python3 -m profiler explain --plan baseline --plan best --shapes official \
  --label explain-baseline-best --out "${P}_explain-baseline-best.json" --trace "$OUT/traces" --keep "$OUT/keep/main" \
  2>&1 | tee -a "$LOG" | tail -n 75
NEED=$(python3 -c "print(int($FIXED + 30 * $PER / 2 + 15))")
if [ "$(left)" -gt "$NEED" ]; then
  step "seed036, 30 official shapes, probes ($NEED s estimated, $(left) s left)"
  timeout $(( $(left) - 5 )) python3 -m profiler explain --plan seed036 --shapes official --label explain-seed036 \
    --out "${P}_explain-seed036.json" --keep "$OUT/keep/seed036" 2>&1 | tee -a "$LOG" | tail -n 40
else
  step "seed036 skipped: $NEED s estimated, $(left) s left"
fi
step done; ls -la "$OUT" | tee -a "$LOG"
