"""Published and measured data for projlab, with strict loaders (torch-free; see datasets/README.md)."""
from datasets.errors import DatasetError
from datasets.paths import DATA_DIR, DEFAULT_WORKLOAD, RUNS_DIR, WORKLOADS_DIR
from datasets.selection import ShapeSelectionError, select_shapes
from datasets.shapes import (DTYPE_BYTES, NEARBY_LOAD, dtype_bytes, is_scored_load, shape_bytes, shape_key,
                             shape_key_of)
from datasets.tables import load_ledger, load_official, load_seed_probes
from datasets.workload import (Workload, list_workloads, load_workload, resolve_workload, workload_from_dict,
                               workload_of_run)

__all__ = ["DATA_DIR", "RUNS_DIR", "WORKLOADS_DIR", "DEFAULT_WORKLOAD", "NEARBY_LOAD",
           "DTYPE_BYTES", "DatasetError", "ShapeSelectionError", "Workload", "load_workload", "resolve_workload",
           "list_workloads", "workload_from_dict", "workload_of_run", "select_shapes", "shape_key", "shape_key_of",
           "shape_bytes", "dtype_bytes", "is_scored_load", "load_official", "load_ledger", "load_seed_probes"]
