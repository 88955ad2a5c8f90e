"""Published and measured data for projlab, with strict loaders (torch-free; see datasets/README.md)."""
from datasets.errors import DatasetError
from datasets.paths import DATA_DIR, RUNS_DIR
from datasets.tables import load_ledger, load_official, load_seed_probes
from datasets.workload import NEARBY_LOAD, Workload, load_workload

__all__ = ["DATA_DIR", "RUNS_DIR", "NEARBY_LOAD", "DatasetError", "Workload", "load_workload", "load_official",
           "load_ledger", "load_seed_probes"]
