"""Uploads: a run file (.json) or a per-shape table (.csv), validated when it arrives and kept on this server in the
upload folder ($PROJLAB_UPLOAD_DIR, else .uploads/ at the repository root: gitignored, never datasets/runs/), named by
its content hash (dashboard.sources.upload_name). A reload or a link naming an upload on the same server finds the
file there again; an upload is listed in the browser session that uploaded it or followed a link to it, not in
everyone's picker.

Limits: MAX_UPLOAD_MB per file; at most MAX_UPLOADS files and MAX_STORE_MB in the folder: the oldest uploads are
removed first when a new one would pass either.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

import streamlit as st

from dashboard import sources
from datasets.jsonfile import LIMITS
from datasets.paths import DATA_DIR, PROJECT_DIR
from ui import loaders

UPLOAD_DIR_ENV = "PROJLAB_UPLOAD_DIR"
DEFAULT_UPLOAD_DIR = PROJECT_DIR / ".uploads"
# The largest committed run file is 1.1 MB (a tune log with every sample); 16 MB is room for ten times that while
# keeping a stray upload from filling the server's memory.
MAX_UPLOAD_BYTES = LIMITS["upload"]
MAX_UPLOAD_MB = MAX_UPLOAD_BYTES // (1024 * 1024)
# The folder as a whole: 100 files, 256 MB (sixteen uploads at the per-file limit), so a server shared by a team keeps
# weeks of uploads without its disk filling.
MAX_UPLOADS = 100
MAX_STORE_MB = 256
_STORED = re.compile(re.escape(sources.UPLOAD_PREFIX) + r"[0-9a-f]{10}-[A-Za-z0-9][A-Za-z0-9._-]*")   # upload_name's
LISTS = {"run": "uploaded_runs", "table": "uploaded_tables"}


def store_dir() -> Path:
    """$PROJLAB_UPLOAD_DIR, else DEFAULT_UPLOAD_DIR; never a folder inside datasets/ (measured and published data:
    an upload there would be listed as a committed run), which falls back to the default."""
    folder = Path(os.environ.get(UPLOAD_DIR_ENV) or DEFAULT_UPLOAD_DIR)
    try:
        folder.resolve().relative_to(DATA_DIR.resolve())
    except ValueError:
        return folder
    return DEFAULT_UPLOAD_DIR


def _prune(keep: Path) -> None:
    """Remove the oldest uploads (by modification time) until the folder is within both limits; never `keep`."""
    max_files, max_bytes = MAX_UPLOADS, MAX_STORE_MB * 1024 * 1024
    files = sorted((p for p in store_dir().iterdir() if p.is_file() and p.name.startswith(sources.UPLOAD_PREFIX)),
                   key=lambda p: p.stat().st_mtime)
    count, total = len(files), sum(p.stat().st_size for p in files)
    for old in files:
        if count <= max_files and total <= max_bytes:
            break
        if old != keep:
            count, total = count - 1, total - old.stat().st_size
            old.unlink(missing_ok=True)


def save(name: str, content: bytes) -> Path:
    """Keep an upload in the folder under its content hash and safe name (written whole: temp file + rename)."""
    folder = store_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / sources.upload_name(name, hashlib.sha256(content).hexdigest())
    if path.exists():
        path.touch()   # uploaded again: the newest, so the last to be pruned
    else:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".tmp-", delete=False) as tmp:
            tmp.write(content)
        os.replace(tmp.name, path)
    _prune(keep=path)
    return path


def find(name: str) -> Path | None:
    """The stored upload a URL names ('upload-<hash>-<name>'), or None (not an upload's name, or not here)."""
    if not _STORED.fullmatch(str(name)):
        return None
    path = store_dir() / name
    return path if path.is_file() else None


def _kind(path: Path) -> str:
    return "table" if path.suffix.lower() == ".csv" else "run"


def _source(path: Path, shown: str) -> sources.Source:
    if _kind(path) == "run":
        return sources.run_source(path, uploaded=True, shown=shown)
    return sources.table_source(path, uploaded=True, shown=shown)


def _validate(path: Path) -> None:
    (loaders.run_data if _kind(path) == "run" else loaders.official)(path)


def _list(path: Path, shown: str) -> None:
    """List the upload as a source of this browser session."""
    listed = st.session_state.setdefault(LISTS[_kind(path)], [])
    if str(path) not in listed:
        listed.append(str(path))
    st.session_state.setdefault("upload_names", {})[str(path)] = shown


def from_links() -> None:
    """List the stored uploads that the address names (?source=, ?runs=) and this session does not list yet: a
    reload, or a link from another browser on this server."""
    listed = {p for key in LISTS.values() for p in st.session_state.get(key, [])}
    for name in [*st.query_params.get_all("source"), *st.query_params.get_all("runs")]:
        path = find(name)
        if path is None or str(path) in listed:
            continue
        try:
            _validate(path)
        except loaders.BAD_INPUT:
            continue   # the address's value is then reported as not available, like any unknown name
        _list(path, name.split("-", 2)[-1])


def _named(message: str, path: Path, name: str) -> str:
    return str(message).replace(str(path), name).replace(path.name, name)


def take_upload(name: str, content: bytes, select: bool = True) -> tuple[bool, str]:
    """Validate an upload, keep it and list it as a source; (ok, the message to show). `select`: make it the
    sidebar's source on every page (the Overview's uploader); else it is only added to Compare's runs. A rejected
    file is deleted and never listed."""
    shown = sources.display_name(name)
    if len(content) > MAX_UPLOAD_BYTES:
        return False, (f"Upload {shown!r} rejected: {len(content):,} bytes is over the {MAX_UPLOAD_BYTES:,}-byte "
                       f"({MAX_UPLOAD_BYTES / 2**20:g} MB) limit")
    suffix = Path(shown).suffix.lower()
    if suffix not in (".json", ".csv"):
        return False, f"Upload {shown!r} rejected: expected a run file (.json) or a per-shape table (.csv)"
    path = save(name, content)
    try:
        _validate(path)
    except loaders.BAD_INPUT as exc:
        path.unlink(missing_ok=True)
        return False, f"Upload {shown!r} rejected: {_named(exc, path, shown)}"
    _list(path, shown)
    src = _source(path, shown)
    chosen = st.session_state.get("_sel_runs")   # Compare shows it beside the sources already chosen there
    if chosen is not None and src.name not in chosen:
        st.session_state["_sel_runs"] = [*chosen, src.name]
    if not select:
        return True, (f"Loaded {shown}: added to the runs compared here; the other pages keep their source (it is "
                      f"listed in the sidebar as {src.label!r}).")
    st.session_state["_sel_source"] = src.name
    return True, (f"Loaded {shown}: it is now the selected source ({src.label!r} in the sidebar) on every page of "
                  "this browser session, Compare included.")


def _on_upload(key: str, select: bool) -> None:
    up = st.session_state.get(key)
    if up is not None:
        st.session_state[f"_upload_msg_{key}"] = take_upload(up.name, up.getvalue(), select)


def upload_widget(key: str = "upload", select: bool = True) -> None:
    """File uploader for a run JSON or an official-format CSV; validated before the page reruns. The limits are
    written on the page, not only in the widget's tooltip."""
    st.file_uploader("Upload a run file (.json) or a per-shape table (.csv: load,family,M,N,K,baseline_us,"
                     "candidate_us)", type=["json", "csv"], key=key, max_upload_size=MAX_UPLOAD_MB,
                     on_change=_on_upload, args=(key, select))
    st.caption(f"At most {MAX_UPLOAD_MB} MB per file ({MAX_UPLOAD_BYTES:,} bytes; the largest committed run file is "
               f"1.1 MB); a larger file is refused before it is read. An upload is kept on this server (the newest "
               f"{MAX_UPLOADS} uploads, {MAX_STORE_MB} MB in all), so a reload or a link to it on this server shows "
               "it again.")
    msg = st.session_state.get(f"_upload_msg_{key}")
    if msg is not None and st.session_state.get(key) is not None:
        (st.success if msg[0] else st.error)(msg[1])
