"""Uploads: a run file (.json) or a per-shape table (.csv), validated when it arrives and kept on this server in the
upload folder ($PROJLAB_UPLOAD_DIR, else .uploads/ at the repository root: gitignored, never datasets/runs/), named by
its content hash (dashboard.model.sources.upload_name). A reload or a link naming an upload on the same server finds the
file there again; an upload is listed in the browser session that uploaded it or followed a link to it, not in
everyone's picker.

An upload is validated (from a temp file in the folder) before anything is stored or removed: a rejected file
changes nothing. Limits: MAX_UPLOAD_MB per file; per browser session (a client) MAX_SESSION_UPLOADS files and
MAX_SESSION_MB, its own oldest uploads removed first to make room (a client removes only what it uploaded: every
upload has one owner mark per client, .owners/<client>/<name>, and the file goes with its last mark); for the folder
MAX_UPLOADS files and MAX_STORE_MB, temp files counted: an upload that would pass them once the client's own are
gone is refused, never made room for with others' files. Uploads nobody uploaded again for MAX_AGE_DAYS and temp
files older than TEMP_MAX_AGE_S (a server killed mid-write) are removed. A folder that cannot be written (full,
read-only) is one line on the page, and the temp file is removed.
"""
from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
import tempfile
import time
from pathlib import Path

import streamlit as st

from dashboard.model import sources
from datasets.jsonfile import LIMITS
from datasets.paths import DATA_DIR, PROJECT_DIR
from ui import loaders

UPLOAD_DIR_ENV = "PROJLAB_UPLOAD_DIR"
DEFAULT_UPLOAD_DIR = PROJECT_DIR / ".uploads"
# LIMITS["upload"] (datasets/jsonfile.py): the limit of every file projlab reads from outside, an upload's included.
MAX_UPLOAD_BYTES = LIMITS["upload"]
MAX_UPLOAD_MB = MAX_UPLOAD_BYTES // (1024 * 1024)
# The folder as a whole: 100 files, 256 MB (sixteen uploads at the per-file limit), so a server shared by a team keeps
# weeks of uploads without its disk filling; one client: a fifth of that, so no client can take the folder.
MAX_UPLOADS = 100
MAX_STORE_MB = 256
MAX_SESSION_UPLOADS = 20
MAX_SESSION_MB = 64
MAX_AGE_DAYS = 30
TEMP_PREFIX = ".tmp-"
TEMP_MAX_AGE_S = 3600      # a write takes well under a second; an older temp file was left by a killed server
OWNERS = ".owners"
CLIENT_KEY = "_upload_client"
_STORED = re.compile(re.escape(sources.UPLOAD_PREFIX) + r"[0-9a-f]{10}-[A-Za-z0-9][A-Za-z0-9._-]*")   # upload_name's
LISTS = {"run": "uploaded_runs", "table": "uploaded_tables"}


class StoreError(Exception):
    """An upload that cannot be kept (the folder is full for it, or cannot be written); one line to show."""


def store_dir() -> Path:
    """$PROJLAB_UPLOAD_DIR, else DEFAULT_UPLOAD_DIR; never a folder inside datasets/ (measured and published data:
    an upload there would be listed as a committed run), which falls back to the default."""
    folder = Path(os.environ.get(UPLOAD_DIR_ENV) or DEFAULT_UPLOAD_DIR)
    try:
        folder.resolve().relative_to(DATA_DIR.resolve())
    except ValueError:
        return folder
    return DEFAULT_UPLOAD_DIR


def client() -> str:
    """This browser session's id for the owner marks: random, kept in its session state (a reload is a new
    client; what the old one uploaded stays until MAX_AGE_DAYS)."""
    return st.session_state.setdefault(CLIENT_KEY, secrets.token_hex(8))


def _files(folder: Path, prefix: str) -> list[tuple[Path, os.stat_result]]:
    out = []
    for p in folder.iterdir():
        if p.name.startswith(prefix):
            try:
                info = p.lstat()
            except OSError:   # removed meanwhile (another client)
                continue
            if stat.S_ISREG(info.st_mode):
                out.append((p, info))
    return out


def _owned_by_anyone(folder: Path, name: str) -> bool:
    marks = folder / OWNERS
    return marks.is_dir() and any((d / name).exists() for d in marks.iterdir())


def _release(folder: Path, who: str, path: Path) -> bool:
    """Remove `who`'s mark on an upload, and the upload when no other client's mark is left; whether it went."""
    (folder / OWNERS / who / path.name).unlink(missing_ok=True)
    if _owned_by_anyone(folder, path.name):
        return False
    path.unlink(missing_ok=True)
    return True


def _clean(folder: Path) -> None:
    """Remove temp files older than TEMP_MAX_AGE_S, uploads unused for MAX_AGE_DAYS and marks whose upload is gone."""
    now = time.time()
    for p, info in _files(folder, TEMP_PREFIX):
        if now - info.st_mtime > TEMP_MAX_AGE_S:
            p.unlink(missing_ok=True)
    for p, info in _files(folder, sources.UPLOAD_PREFIX):
        if now - info.st_mtime > MAX_AGE_DAYS * 86400:
            p.unlink(missing_ok=True)
    marks = folder / OWNERS
    if marks.is_dir():
        for mark in marks.glob("*/*"):
            if not (folder / mark.name).exists():
                mark.unlink(missing_ok=True)


def _make_room(folder: Path, who: str, size: int, staged: Path) -> None:
    """Remove `who`'s own oldest uploads until one more of `size` bytes fits its quota and the folder's caps;
    StoreError when it would still not fit the folder's (the rest are other clients')."""
    uploads = sorted(_files(folder, sources.UPLOAD_PREFIX), key=lambda e: e[1].st_mtime)
    temps = [e for e in _files(folder, TEMP_PREFIX) if e[0] != staged]
    own = [e for e in uploads if (folder / OWNERS / who / e[0].name).exists()]
    count, total = len(uploads) + len(temps), sum(e[1].st_size for e in uploads + temps)
    n_own, own_bytes = len(own), sum(e[1].st_size for e in own)

    def over() -> bool:
        return (n_own + 1 > MAX_SESSION_UPLOADS or own_bytes + size > MAX_SESSION_MB * 2**20
                or count + 1 > MAX_UPLOADS or total + size > MAX_STORE_MB * 2**20)

    for path, info in own:
        if not over():
            break
        n_own, own_bytes = n_own - 1, own_bytes - info.st_size
        if _release(folder, who, path):
            count, total = count - 1, total - info.st_size
    if over():
        raise StoreError(f"the upload folder is full ({count} files, {total / 2**20:.1f} MB; at most {MAX_UPLOADS} "
                         f"files and {MAX_STORE_MB} MB, uploads unused for {MAX_AGE_DAYS} days are removed); other "
                         f"clients' uploads are kept, so try again later")


def save(name: str, content: bytes, validate=None, who: str | None = None) -> Path:
    """Keep an upload in the folder under its content hash and safe name: written to a temp file, checked by
    `validate(temp path)` (its exception propagates; nothing else is touched), room made (_make_room), then renamed
    into place and marked as `who`'s. The temp file is removed whatever happens; a folder that cannot be written
    is a StoreError naming it."""
    who = who or client()
    folder = store_dir()
    path = folder / sources.upload_name(name, hashlib.sha256(content).hexdigest())
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _clean(folder)
        if not path.exists():
            fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=TEMP_PREFIX, suffix=Path(path.name).suffix)
            tmp = Path(tmp_name)
            with os.fdopen(fd, "wb") as handle:
                handle.write(content)
            if validate is not None:
                validate(tmp)
            _make_room(folder, who, len(content), tmp)
            os.replace(tmp, path)
        else:
            path.touch()   # uploaded again: the newest, so the last to be removed
        mark = folder / OWNERS / who / path.name
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.touch()
    except OSError as exc:
        raise StoreError(f"the upload folder {folder} cannot be written ({exc.strerror or exc})") from None
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
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
    staged: list[Path] = []

    def check(tmp: Path) -> None:
        staged.append(tmp)
        _validate(tmp)

    try:
        path = save(name, content, validate=check)
    except StoreError as exc:
        return False, f"Upload {shown!r} not stored: {exc}"
    except loaders.BAD_INPUT as exc:
        return False, f"Upload {shown!r} rejected: {_named(exc, staged[-1], shown) if staged else exc}"
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
               f"1.1 MB); a larger file is refused before it is read. An upload is kept on this server, so a reload or "
               f"a link to it on this server shows it again: {MAX_SESSION_UPLOADS} uploads ({MAX_SESSION_MB} MB) per "
               f"browser session, your oldest replaced first; {MAX_UPLOADS} uploads ({MAX_STORE_MB} MB) on the "
               f"server, refused when full.")
    msg = st.session_state.get(f"_upload_msg_{key}")
    if msg is not None and st.session_state.get(key) is not None:
        (st.success if msg[0] else st.error)(msg[1])
