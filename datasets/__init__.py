"""Published and measured data for projlab, with strict loaders (torch-free; see datasets/README.md).

The names below are read from their modules when first asked for (PEP 562): importing the package, or a light module
of it such as datasets.startup, imports neither numpy nor pandas, so a command line can guard its own slow imports
(datasets.startup.interrupted_while_importing) before anything heavy loads."""
from __future__ import annotations

import importlib

_FROM = {
    "datasets.errors": ["DatasetError"],
    "datasets.paths": ["DATA_DIR", "DEFAULT_WORKLOAD", "RUNS_DIR", "WORKLOADS_DIR"],
    "datasets.selection": ["ShapeSelectionError", "select_shapes"],
    "datasets.shapes": ["DTYPE_BYTES", "NEARBY_LOAD", "dtype_bytes", "is_scored_load", "shape_bytes", "shape_key",
                        "shape_key_of"],
    "datasets.tables": ["load_ledger", "load_official", "load_seed_probes"],
    "datasets.workload": ["Workload", "list_workloads", "load_workload", "resolve_workload", "workload_from_dict",
                          "workload_of_run"],
}
_MODULE_OF = {name: module for module, names in _FROM.items() for name in names}

__all__ = ["DATA_DIR", "RUNS_DIR", "WORKLOADS_DIR", "DEFAULT_WORKLOAD", "NEARBY_LOAD",
           "DTYPE_BYTES", "DatasetError", "ShapeSelectionError", "Workload", "load_workload", "resolve_workload",
           "list_workloads", "workload_from_dict", "workload_of_run", "select_shapes", "shape_key", "shape_key_of",
           "shape_bytes", "dtype_bytes", "is_scored_load", "load_official", "load_ledger", "load_seed_probes"]


def __getattr__(name: str):
    """A name of __all__ from its module (read there at every use: the package's namespace never changes, and the
    worker's guard holds it as it is -- profiler.check.guards); a submodule (`datasets.runfile`) imported."""
    if name in _MODULE_OF:
        return getattr(importlib.import_module(_MODULE_OF[name]), name)
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
