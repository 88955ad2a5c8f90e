#!/usr/bin/env bash
# The device sessions behind the committed GPU runs (datasets/runs/<date>_<card>_*.json; the committed ones are an
# H200's). Every file is named by the card that ran it: <card> is the driver's name for GPU 0 as the profiler's
# default run-file names spell it (datasets.runfile.slug: "NVIDIA H100 80GB HBM3" -> nvidia-h100-80gb-hbm3).
# Run from the repo root on the GPU host:
#     OUT=/some/dir TAG=after-redesign PROJLAB_GIT_SHA=<commit> STAGES="tune sweeps" bash profiler/gpu_session.sh
# PROJLAB_GIT_SHA: the device copy has no .git, so run files record the commit they were given. TAG suffixes
# every run name (never reused: runs are never overwritten). Everything lands in $OUT (run files over 256 KB
# gzipped at the end) and is copied into datasets/runs by hand, never edited. Each step has its own time limit so one failure cannot eat the others'.
# Stages (run in the order given):
#   tune     re-tune the best plan (TUNE_FAMILIES, default all; TUNE_M: only those M, the rest kept; TUNE_METHODS: only
#            those methods, the baseline always in) -> $OUT/best.json
#            and kernels/plans/best.json
#   screen   the config survey (profiler survey): every config of SCREEN_METHODS against torch_linear and best's pick, official shapes (SCREEN_FAMILIES)
#            plus M=SCREEN_EXTRA_M, named screen-SCREEN_LABEL
#   sweeps   paired baseline/seed036/seed039/best sweep with probes; a second back-to-back baseline-vs-best sweep
#            (repeatability of the score); best vs baseline on nearby + extra M (generalization, any-M dispatch)
#   explain  Nsight Compute + Kineto breakdown of baseline and best over the official shapes
#   trust    baseline + every known-wrong candidate of profiler/wrong/ over the official shapes, then a
#            baseline-only sweep (the baseline must stay correct and at its usual time)
#   gputests the GPU tests of the known-wrong set, the worker and the kernels (TEST_PATHS, TEST_K: a subset); prints
#            the failed tests, the memory tripwire's lines and the summary
#   repeat   two back-to-back baseline-vs-baseline sweeps over official + nearby shapes
#   cluster  baseline vs best, official, twice in one process and twice through `--cluster local` (a dask cluster
#            of one worker per GPU), alternating: the same scores and the cost of the cluster path. Installs dask
#            from .whl/ (wheels brought with the tree: the GPU host has no package index) when it is not there.
#   llama    the llama31_8b_decode workload: tune its plan, then baseline vs that plan with probes, then explain
#   peers    baseline, best and the three peer plans (tunableop, torch_compile, flashinfer), official shapes, twice
#            back to back (the second reuses Inductor's cache: its compile seconds are the warm figure)
#   paired   one baseline-vs-best official sweep (the measurement path as it is now, against the last committed one)
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT}; mkdir -p "$OUT"
CARD=$(python3 -c "import torch; from datasets.runfile import slug; print(slug(torch.cuda.get_device_name(0)))") \
  || { echo "no CUDA device to name the files by" >&2; exit 1; }
D=$(date -u +%F); P="$OUT/${D}_${CARD}"; T=${TAG:+-$TAG}
LOG="$OUT/session.log"
BEST=kernels/plans/best.json
EXTRA_M=2,4,12,24,48,64,96,200,384,512,1024   # the extra M of the any-M dispatch check (plus the nearby set)
# every known-wrong candidate of profiler/wrong/ (ALL_WRONG), named there once, as its spec (file:Class)
WRONG=$(python3 -c "from profiler.wrong import ALL_WRONG, spec; print(' '.join(spec(c) for c in ALL_WRONG))")
step() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
clean() { tr '\r' '\n' | grep -v 'it/s\]$' | tee -a "$LOG"; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv
  python3 -c "import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)"; } 2>&1 | tee -a "$LOG"

for stage in ${STAGES:-tune sweeps explain trust}; do case $stage in
tune)
  step "tune ${TUNE_FAMILIES:-all families}, official shapes"
  timeout ${TUNE_S:-300} python3 -m profiler tune --shapes official ${TUNE_FAMILIES:+--families $TUNE_FAMILIES} \
    ${TUNE_M:+--m $TUNE_M} ${TUNE_METHODS:+--methods $TUNE_METHODS} \
    --base-plan $BEST --out-plan $BEST --out-run "${P}_tune$T.json" --budget-s ${TUNE_BUDGET_S:-260} \
    --compile-workers 16 2>&1 | clean | tail -n 50
  cp $BEST "$OUT/best.json" ;;
screen)
  step "screen: $SCREEN_METHODS vs torch_linear and best's pick, official${SCREEN_EXTRA_M:+ + M=$SCREEN_EXTRA_M}"
  timeout ${SCREEN_S:-240} python3 -m profiler survey --methods $SCREEN_METHODS --plan $BEST --shapes official \
    ${SCREEN_FAMILIES:+--families $SCREEN_FAMILIES} ${SCREEN_EXTRA_M:+--extra-m $SCREEN_EXTRA_M} \
    --label screen-${SCREEN_LABEL:?set SCREEN_LABEL}$T --out-run "${P}_screen-$SCREEN_LABEL$T.json" \
    --compile-workers 16 2>&1 | clean | tail -n 60 ;;
sweeps)
  step "paired sweep: baseline vs seed036 vs seed039 vs best, official, cold, probes"
  timeout 200 python3 -m profiler run --plan baseline --plan seed036 --plan seed039 --plan $BEST --shapes official \
    --label baseline-seed036-seed039-best$T --out "${P}_baseline-seed036-seed039-best$T.json" 2>&1 | clean \
    | tail -n 45
  step "second sweep (back to back): baseline vs best, official, cold, probes"
  timeout 90 python3 -m profiler run --plan baseline --plan $BEST --shapes official \
    --label baseline-vs-best-b$T --out "${P}_baseline-vs-best-b$T.json" 2>&1 | clean | tail -n 8
  step "generalization: baseline vs best, nearby + M=$EXTRA_M, no probes"
  timeout 150 python3 -m profiler run --plan baseline --plan $BEST --shapes "nearby+M=$EXTRA_M" --no-probes \
    --max-seconds-per-shape 1.0 --label baseline-vs-best-nearby-extra$T \
    --out "${P}_baseline-vs-best-nearby-extra$T.json" 2>&1 | clean | tail -n 12 ;;
explain)
  step "explain: baseline and best under Nsight Compute + Kineto, official"
  timeout ${EXPLAIN_S:-150} python3 -m profiler explain --plan baseline --plan $BEST --shapes official \
    --label explain-baseline-best$T --out "${P}_explain-baseline-best$T.json" 2>&1 | clean | tail -n 12 ;;
trust)
  step "isolation: baseline + every known-wrong candidate, official, cold, probes"
  timeout ${TRUST_S:-300} python3 -m profiler run --plan baseline \
    $(for c in $WRONG; do printf -- '--candidate %s ' "$c"; done) --shapes official \
    --shape-timeout-s 20 --max-seconds-per-shape 1.0 --label baseline-vs-known-wrong$T \
    --out "${P}_baseline-vs-known-wrong$T.json" 2>&1 | clean | tail -n 60
  step "baseline only, same session, official, cold, probes"
  timeout 90 python3 -m profiler run --plan baseline --shapes official --max-seconds-per-shape 1.0 \
    --label baseline-only$T --out "${P}_baseline-only$T.json" 2>&1 | clean | tail -n 8 ;;
gputests)
  step "GPU tests"
  # --dist load: test by test over the 8 workers (pytest.ini hands whole files to one worker, for the CPU suite)
  timeout ${TEST_S:-120} python3 -m pytest -q -m gpu -p no:cacheprovider -n 8 --dist load ${TEST_PATHS:-tests/profiler tests/kernels} \
    ${TEST_K:+-k "$TEST_K"} -rf --tb=no 2>&1 \
    | grep -E "^(FAILED|ERROR)|^projlab:| passed| failed" | tail -n 60 | tee -a "$LOG" ;;
repeat)
  for ab in a b; do
    step "repeatability sweep $ab: baseline vs baseline, official + nearby, cold, probes"
    timeout 70 python3 -m profiler run --plan baseline --plan baseline --shapes all \
      --label "baseline-vs-baseline-$ab$T" --out "${P}_baseline-vs-baseline-$ab$T.json" 2>&1 | clean | tail -n 12
  done ;;
cluster)
  if ! python3 -c "import distributed" 2>/dev/null && [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/projlab-site .whl/*.whl
    export PYTHONPATH=/tmp/projlab-site${PYTHONPATH:+:$PYTHONPATH}
  fi
  for r in "" -again; do
    step "single process: baseline vs best, official, cold, probes$r"
    timeout 120 python3 -m profiler run --plan baseline --plan $BEST --shapes official \
      --label baseline-best-single$r$T --out "${P}_baseline-best-single$r$T.json" 2>&1 | clean | tail -n 8
    step "--cluster local: baseline vs best, official, cold, probes$r"
    timeout 180 python3 -m profiler run --plan baseline --plan $BEST --shapes official --cluster local \
      --label baseline-best-cluster$r$T --out "${P}_baseline-best-cluster$r$T.json" 2>&1 | clean | tail -n 12
  done ;;
llama)
  W=llama31_8b_decode; LP=kernels/plans/$W.json
  step "tune $W, official shapes"
  timeout ${TUNE_S:-300} python3 -m profiler tune --workload $W --shapes official --out-plan $LP \
    --out-run "${P}_tune-$W$T.json" --budget-s ${TUNE_BUDGET_S:-240} --compile-workers 16 2>&1 | clean | tail -n 40
  cp $LP "$OUT/$W.json"
  step "paired sweep: baseline vs $W plan, official, cold, probes"
  timeout 120 python3 -m profiler run --workload $W --plan baseline --plan $LP --shapes official \
    --label baseline-vs-$W$T --out "${P}_baseline-vs-$W$T.json" 2>&1 | clean | tail -n 30
  step "explain: baseline and the $W plan under Nsight Compute + Kineto, official"
  timeout ${EXPLAIN_S:-150} python3 -m profiler explain --workload $W --plan baseline --plan $LP --shapes official \
    --label explain-$W$T --out "${P}_explain-$W$T.json" 2>&1 | clean | tail -n 12 ;;
peers)
  for r in a b; do
    step "peers $r: baseline, best, tunableop, torch_compile, flashinfer; official, cold, probes"
    timeout ${PEERS_S:-400} python3 -m profiler run --plan baseline --plan $BEST --plan tunableop --plan torch_compile \
      --plan flashinfer --shapes official --shape-timeout-s 300 --label peers-$r$T --out "${P}_peers-$r$T.json" 2>&1 \
      | clean | tail -n 30
  done ;;
paired)
  step "paired sweep: baseline vs best, official, cold, probes"
  timeout 120 python3 -m profiler run --plan baseline --plan $BEST --shapes official \
    --label baseline-vs-best-paired$T --out "${P}_baseline-vs-best-paired$T.json" 2>&1 | clean | tail -n 12 ;;
*) step "unknown stage $stage" ;;
esac; done
# Run files over 256 KB (sweeps with every sample, tunes, surveys) are kept gzipped (`gzip -n -9`: the same bytes
# compressed, 5-6x smaller; every reader takes both), the form they are committed in.
for f in "$P"_*.json; do
  if [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt 262144 ]; then gzip -n -9 "$f"; fi
done
step done; ls -la "$OUT" | tee -a "$LOG"
