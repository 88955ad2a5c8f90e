"""Where the committed data files live (next to this module), so loaders work from any working directory."""
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent
WORKLOAD_JSON = DATA_DIR / "workload.json"
OFFICIAL_036_CSV = DATA_DIR / "official_036.csv"
SEED_LEDGER_CSV = DATA_DIR / "seed_ledger.csv"
SEED_PROBES_CSV = DATA_DIR / "seed_probes.csv"
RUNS_DIR = DATA_DIR / "runs"
