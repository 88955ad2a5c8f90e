"""cuBLASLt search files (datasets/cublaslt_search/*.json): what tests/benchmarks/bench_cublaslt_search.py measured
per shape -- torch_linear, the fastest configuration of each orientation the library's heuristic lists, and the
fastest ones it found beyond that list -- timed cold and paired in one process (measured). Read here once, for the
tuner's space (kernels/launch/cublaslt.py `searched`) and the library-ceiling views (dashboard/model/library_ceiling.py).

    search_files(folder=CUBLASLT_SEARCH_DIR) -> [Path]     the files, sorted by name (their date first)
    read_search(path) -> SearchFile                         DatasetError naming the file and field on a bad one
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from datasets.errors import DatasetError
from datasets.jsonfile import JsonInputError, read_checked
from datasets.paths import CUBLASLT_SEARCH_DIR

FINAL_KINDS = ("torch_linear", "heuristic", "found")
ORIENTS = ("nk", "kn", "swap")


@dataclass(frozen=True)
class Final:
    """One re-measured finalist: `kind` torch_linear, heuristic (the heuristic's fastest config of `orient`) or found
    (a config beyond its list); `median_us` measured; `vs_heuristic` the paired ratio over the fastest heuristic
    config of the shape as the benchmark recorded it (None when the file has none)."""

    kind: str
    orient: str | None
    config: dict
    median_us: float
    vs_heuristic: float | None


@dataclass(frozen=True)
class SearchShape:
    M: int
    N: int
    K: int
    finals: tuple

    def best(self, kind: str) -> Final | None:
        """The fastest final of one kind (by median), or None."""
        of_kind = [f for f in self.finals if f.kind == kind]
        return min(of_kind, key=lambda f: f.median_us) if of_kind else None


@dataclass(frozen=True)
class SearchFile:
    path: Path
    cublaslt_version: int
    gpu: str | None
    commit: str | None
    shapes: tuple

    def shape(self, M: int, N: int, K: int) -> SearchShape | None:
        return next((s for s in self.shapes if (s.M, s.N, s.K) == (M, N, K)), None)


def search_files(folder=None) -> list[Path]:
    return sorted(Path(folder or CUBLASLT_SEARCH_DIR).glob("*.json"))


def _int(path, field, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or value < 0:
        raise DatasetError(path, field, f"expected a non-negative integer, got {value!r}")
    return int(value)


def _final(path, where: str, raw) -> Final:
    if not isinstance(raw, dict):
        raise DatasetError(path, where, f"expected an object, got {type(raw).__name__}")
    name = raw.get("name")
    kind, _, orient = str(name).partition(" ")
    if kind not in FINAL_KINDS or (kind != "torch_linear" and orient not in ORIENTS):
        raise DatasetError(path, f"{where}.name", f"expected 'torch_linear', 'heuristic <orient>' or 'found <orient>' "
                                                  f"(orient one of {', '.join(ORIENTS)}), got {name!r}")
    config = raw.get("config")
    if not isinstance(config, dict):
        raise DatasetError(path, f"{where}.config", f"expected an object, got {config!r}")
    config = {k: _int(path, f"{where}.config.{k}", v) for k, v in config.items()}
    us = raw.get("median_us")
    if isinstance(us, bool) or not isinstance(us, (int, float)) or not 0 < us < float("inf"):
        raise DatasetError(path, f"{where}.median_us", f"expected a positive number of µs, got {us!r}")
    ratio = raw.get("ratio_vs_best_heuristic")
    if ratio is not None and (isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not ratio > 0):
        raise DatasetError(path, f"{where}.ratio_vs_best_heuristic", f"expected a positive number, got {ratio!r}")
    return Final(kind, orient or None, config, float(us), None if ratio is None else float(ratio))


def read_search(path) -> SearchFile:
    """One search file, every field the readers use checked: DatasetError naming the file and field otherwise."""
    path = Path(path)
    try:   # read_checked: a regular file within a run file's limit, or one JsonInputError line
        report = json.loads(read_checked(path, "run file").decode("utf-8"))
    except JsonInputError as exc:
        raise DatasetError(path, "file", str(exc).split(": ", 1)[-1]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(path, "file", f"cannot be read: {exc}") from exc
    except ValueError as exc:
        raise DatasetError(path, "file", f"not JSON ({type(exc).__name__}: {exc})") from exc
    if not isinstance(report, dict):
        raise DatasetError(path, "file", f"expected a JSON object, got {type(report).__name__}")
    version = _int(path, "cublaslt_version", report.get("cublaslt_version"))
    shapes = report.get("shapes")
    if not isinstance(shapes, list):
        raise DatasetError(path, "shapes", f"expected a list, got {shapes!r}")
    out = []
    for i, raw in enumerate(shapes):
        where = f"shapes[{i}]"
        if not isinstance(raw, dict):
            raise DatasetError(path, where, f"expected an object, got {type(raw).__name__}")
        M, N, K = (_int(path, f"{where}.{k}", raw.get(k)) for k in ("M", "N", "K"))
        finals = raw.get("finals")
        if not isinstance(finals, list):
            raise DatasetError(path, f"{where}.finals", f"expected a list, got {finals!r}")
        out.append(SearchShape(M, N, K, tuple(_final(path, f"{where}.finals[{j}]", f) for j, f in enumerate(finals))))
    gpu, commit = report.get("gpu"), report.get("commit")
    return SearchFile(path, version, gpu if isinstance(gpu, str) else None,
                      commit if isinstance(commit, str) and commit else None, tuple(out))
