"""Where the committed data files live (next to this module), so loaders work from any working directory."""
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent
PROJECT_DIR = DATA_DIR.parent                      # the repository root: the app reads user paths only below it
WORKLOADS_DIR = DATA_DIR / "workloads"             # <name>.json, found by name (datasets/README.md, 'Workloads')
DEFAULT_WORKLOAD = "muse_bf16_proj"                # the contest workload every older run was measured with
WORKLOAD_JSON = WORKLOADS_DIR / f"{DEFAULT_WORKLOAD}.json"
OFFICIAL_036_CSV = DATA_DIR / "official_036.csv"
SEED_LEDGER_CSV = DATA_DIR / "seed_ledger.csv"
SEED_PROBES_CSV = DATA_DIR / "seed_probes.csv"
RUNS_DIR = DATA_DIR / "runs"
