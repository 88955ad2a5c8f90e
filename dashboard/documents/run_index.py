"""The run index: what each committed run file is (run_kinds.RunMeta: kind, date, workload, candidates, fleet or not,
scored candidates), read once from every committed file and kept in dashboard/documents/run_index.json (generated, like
RESULTS.md; datasets/ holds measured and published data only), so the app lists and
groups ~190 committed runs without opening each one (the files are never edited, so their classification never
changes; tests/dashboard/test_run_index.py checks the committed index against the files, like RESULTS.md).

    build(runs_dir)          -> dict       the index of a folder of run files (each file read and validated)
    render(index)            -> str        its JSON text, as committed
    read(path, runs_dir)     -> {name: (bytes, RunMeta)}
    metas(paths, index)      -> {Path: RunMeta}   from the index where a file is in it with the same size, else read
                                                   directly (a new run, an extra run, an upload); unreadable files
                                                   left out

Regenerate with `python -m dashboard index --out dashboard/documents/run_index.json` after adding a run file.
"""
from __future__ import annotations

import json
from pathlib import Path

from datasets import RUNS_DIR
from dashboard.model import runs
from dashboard.model.run_kinds import HOME_DEVICE, RunMeta, run_meta

RUN_INDEX_JSON = Path(__file__).resolve().with_name("run_index.json")


def _entry(path: Path, meta: RunMeta) -> dict:
    return {"file": path.name, "bytes": path.stat().st_size, "kind": meta.kind, "created_utc": meta.created_utc,
            "workload": meta.workload, "candidates": list(meta.candidates), "cluster": meta.cluster,
            "scored": meta.scored, "device": meta.device}


def build(runs_dir=RUNS_DIR) -> dict:
    """The index of every run file in `runs_dir` that loads (one that does not is left out: the app then reads it
    directly and names its problem)."""
    entries = []
    for path in runs.list_runs(runs_dir):
        meta = run_meta(path)
        if meta is not None:
            entries.append(_entry(path, meta))
    return {"generated_by": "python -m dashboard index", "runs": entries}


def render(index: dict) -> str:
    return json.dumps(index, indent=1, ensure_ascii=False) + "\n"


def read(path=RUN_INDEX_JSON, runs_dir=RUNS_DIR) -> dict[str, tuple[int, RunMeta]]:
    """File name → (its size in bytes when indexed, its RunMeta, with the path inside `runs_dir`); {} when there is
    no index (every run is then read directly)."""
    try:
        index = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out = {}
    for e in index.get("runs", []):
        meta = RunMeta(Path(runs_dir) / e["file"], e["kind"], e["created_utc"], e["workload"],
                       tuple(e["candidates"]), bool(e["cluster"]), int(e["scored"]),
                       str(e.get("device") or HOME_DEVICE))
        out[e["file"]] = (int(e["bytes"]), meta)
    return out


def indexed(path: Path, index: dict[str, tuple[int, RunMeta]]) -> RunMeta | None:
    """The index's RunMeta of `path` when it is the indexed file (same folder, same size), else None."""
    hit = index.get(path.name)
    if hit is None or hit[1].path != path:
        return None
    try:
        return hit[1] if path.stat().st_size == hit[0] else None
    except OSError:
        return None


def metas(paths, index: dict[str, tuple[int, RunMeta]], read_meta=run_meta) -> dict[Path, RunMeta]:
    """The RunMeta of each path: from the index when it holds that file, else `read_meta(path)` (run_kinds.run_meta;
    the app passes one through its cached loader). Files that do not load are left out."""
    out = {}
    for path in map(Path, paths):
        meta = indexed(path, index) or read_meta(path)
        if meta is not None:
            out[path] = meta
    return out
