"""Writing report files without losing anything: whole files only (temp file + rename), never over an input or a
run file, never into datasets/ (published and measured data; runs are never overwritten).

    write_files(out_dir, {name: text or callable}, inputs=()) -> [Path]   OutputError when a rule would break
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from datasets import DATA_DIR
from datasets.jsonfile import JsonInputError, read_json
from datasets.paths import is_run_name
from datasets.runfile import write_text_atomic


class OutputError(ValueError):
    """A report would be written where it must not; the message names the path and the rule."""


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False


def _is_run_file(path: Path) -> bool:
    """A JSON file shaped like a run (schema_version + results): never overwritten by a report."""
    if not is_run_name(path.name) or not path.is_file():
        return False
    try:
        doc = read_json(path)
    except JsonInputError:
        return False
    return isinstance(doc, dict) and "schema_version" in doc and "results" in doc


def check_target(path: Path, inputs=()) -> None:
    if _inside(path, DATA_DIR):
        raise OutputError(f"{path}: refusing to write into {DATA_DIR.name}/ (published and measured data; "
                          "runs are never overwritten) — pick another --out folder")
    for src in inputs:
        if path.exists() and Path(src).exists() and path.resolve() == Path(src).resolve():
            raise OutputError(f"{path}: refusing to overwrite the report's own input")
    if _is_run_file(path):
        raise OutputError(f"{path}: refusing to overwrite a run file (runs are never overwritten)")


def write_atomic(path: Path, text: str) -> Path:
    """datasets.runfile.write_text_atomic: temp file, fsync, rename (the old file or the whole new one), with the
    umask's mode."""
    return write_text_atomic(path, text, overwrite=True)


def write_files(out_dir, files: dict[str, str | Callable[[], str]], inputs=()) -> list[Path]:
    """Check every target first (nothing is written if one breaks a rule), then write each atomically."""
    out_dir = Path(out_dir)
    targets = {out_dir / name: content for name, content in files.items()}
    for path in targets:
        check_target(path, inputs)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [write_atomic(path, content() if callable(content) else content) for path, content in targets.items()]
