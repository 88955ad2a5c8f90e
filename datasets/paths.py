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
# What tests/benchmarks/bench_cublaslt_search.py printed as JSON, copied here unedited: cuBLASLt configurations beyond
# its heuristic's list, per shape and library version, which kernels/launch/cublaslt.py offers the tuner.
CUBLASLT_SEARCH_DIR = DATA_DIR / "cublaslt_search"
# A run file is '<date>_<gpu>_<label>.json' as the profiler writes it, or '.json.gz': the same bytes through
# `gzip -n -9`, how tune and survey logs are committed (they time every config of every method, 0.9-3.3 MB each;
# compressed about 6x smaller), and every run file over 256 KB (a nearby + extra M sweep: 0.9 MB). Every reader
# goes through datasets.jsonfile.read_json, which takes both; a name is found with either (find_run_file).
RUN_SUFFIXES = (".json", ".json.gz")


def is_run_name(name: str) -> bool:
    """Whether a file name has a run file's suffix (.json or .json.gz)."""
    return name.lower().endswith(RUN_SUFFIXES)


def link_outside_project(path) -> bool:
    """Whether `path` is a symbolic link whose target lies outside the project: a file dropped into a data folder
    must not make projlab read (and show) something elsewhere on the machine."""
    path = Path(path)
    if not path.is_symlink():
        return False
    return not path.resolve().is_relative_to(PROJECT_DIR.resolve())


def run_paths(folder) -> list[Path]:
    """The run files directly in `folder` (both suffixes; hidden files and links that leave the project left
    out), in name order."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and is_run_name(p.name) and not p.name.startswith(".")
                  and not link_outside_project(p))


def missing_file_hint(path) -> str:
    """' (did you mean X.json.gz? ...)' when `path` is missing and its gzip-compressed sibling exists (run files
    over 256 KB are committed compressed), else ''."""
    packed = Path(path).with_name(Path(path).name + ".gz")
    return f" (did you mean {packed}? large run files are committed gzip-compressed)" if packed.is_file() else ""


def find_run_file(text, runs_dir=RUNS_DIR) -> Path | None:
    """The run file `text` names, as every command that reads one finds it: a path to the file, or a name in
    datasets/runs/; with its suffix or without (.json, .json.gz: the same bytes, either one found). The path as
    given is tried before datasets/runs/, and the suffix given before the other one. None: no such run file."""
    given = Path(text)
    stem = run_stem(given.name) if is_run_name(given.name) else given.name
    suffixes = (".json.gz", ".json") if given.name.lower().endswith(".json.gz") else (".json", ".json.gz")
    for folder in (given.parent, Path(runs_dir) / given.parent):
        for suffix in suffixes:
            path = folder / f"{stem}{suffix}"
            if stem and path.is_file() and not path.name.startswith(".") and not link_outside_project(path):
                return path
    return None


def no_run_file(text) -> str:
    """The one line for a run file `text` does not name (find_run_file found nothing)."""
    return (f"{text}: no run file (.json / .json.gz) by that name, as a path or in "
            f"{RUNS_DIR.relative_to(PROJECT_DIR)}/")


def run_stem(name: str) -> str:
    """A run file's name without its suffix ('.json' or '.json.gz')."""
    lower = name.lower()
    for suffix in sorted(RUN_SUFFIXES, key=len, reverse=True):
        if lower.endswith(suffix):
            return name[: -len(suffix)]
    return Path(name).stem
