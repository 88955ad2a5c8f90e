"""The upload folder (ui.uploads) shared by every client of a server: a file is validated before anything is stored
or removed, a client makes room only with its own uploads, the folder's caps refuse instead of taking others' files,
temp files count and are cleaned, and a folder that cannot be written is one line on the page."""
import errno
import os
import time

import pytest

from ui import uploads



def _names(folder):
    return sorted(p.name.split("-", 2)[-1] for p in folder.glob("upload-*"))


def _ok(path):
    """A validator that accepts (the unit tests here are about the folder, not the run-file schema)."""


def _reject(path):
    raise ValueError(f"{path}: not a run file")


@pytest.fixture
def caps(monkeypatch):
    monkeypatch.setattr(uploads, "MAX_SESSION_UPLOADS", 2)
    monkeypatch.setattr(uploads, "MAX_UPLOADS", 4)


def test_a_client_evicts_only_its_own_uploads(upload_dir, caps):
    for i in range(2):
        uploads.save(f"a{i}.json", b"a%d" % i, _ok, who="A")
    for i in range(5):   # B goes on past its quota: its own oldest go, never A's
        uploads.save(f"b{i}.json", b"b%d" % i, _ok, who="B")
    assert _names(upload_dir) == ["a0.json", "a1.json", "b3.json", "b4.json"]


def test_the_folder_cap_refuses_rather_than_evict_others(upload_dir, caps):
    for who in "AB":
        for i in range(2):
            uploads.save(f"{who}{i}.json", f"{who}{i}".encode(), _ok, who=who)
    before = _names(upload_dir)
    with pytest.raises(uploads.StoreError, match=r"^the upload folder is full \(4 files, .*at most 4 files"):
        uploads.save("c.json", b"c", _ok, who="C")   # C has nothing of its own to give up
    assert _names(upload_dir) == before
    uploads.save("a2.json", b"a2", _ok, who="A")      # A may replace its own oldest
    assert _names(upload_dir) == ["A1.json", "B0.json", "B1.json", "a2.json"]


def test_a_file_both_clients_uploaded_stays_while_one_still_has_it(upload_dir, caps):
    shared = uploads.save("same.json", b"same", _ok, who="A")
    uploads.save("same.json", b"same", _ok, who="B")
    for i in range(2):   # A's quota pushes out its mark on the shared file; B's mark keeps it
        uploads.save(f"a{i}.json", b"a%d" % i, _ok, who="A")
    assert shared.is_file()


def test_a_rejected_file_stores_and_evicts_nothing(upload_dir, caps):
    for i in range(2):
        uploads.save(f"a{i}.json", b"a%d" % i, _ok, who="A")
    before = sorted(p.name for p in upload_dir.iterdir())
    with pytest.raises(ValueError, match="not a run file"):
        uploads.save("bad.json", b"bad", _reject, who="A")
    assert sorted(p.name for p in upload_dir.iterdir()) == before   # no temp file left either


def test_temp_files_count_and_stale_ones_are_cleaned(upload_dir, monkeypatch):
    monkeypatch.setattr(uploads, "MAX_STORE_MB", 1)
    upload_dir.mkdir()
    live = upload_dir / ".tmp-live.json"
    live.write_bytes(b" " * (1 << 20))   # another upload being written: counted
    with pytest.raises(uploads.StoreError, match="full"):
        uploads.save("x.json", b"x", _ok, who="A")
    stale = time.time() - uploads.TEMP_MAX_AGE_S - 60
    os.utime(live, (stale, stale))        # left by a killed server: removed
    uploads.save("x.json", b"x", _ok, who="A")
    assert not live.exists() and _names(upload_dir) == ["x.json"]


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_a_folder_that_cannot_be_written_is_one_line_and_leaves_no_temp_file(app, upload_dir, monkeypatch, code):
    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))
    monkeypatch.setattr(uploads.os, "replace", fail)
    at = app.open_page("overview")
    app.upload(at, "upload_overview", "mine.json", (app.FIXTURES / "synthetic_b.json").read_bytes())
    assert not at.exception
    errors = [e.value for e in at.error]
    assert errors == [f"Upload 'mine.json' not stored: the upload folder {upload_dir} cannot be written "
                      f"({os.strerror(code)})"], errors
    assert not list(upload_dir.glob(".tmp-*")) and not _names(upload_dir)


def test_a_rejected_upload_on_the_page_keeps_another_clients_files(app, upload_dir):
    first = app.open_page("overview")
    app.upload(first, "upload_overview", "mine.json", (app.FIXTURES / "synthetic_b.json").read_bytes())
    other = app.open_page("overview")   # a second browser session: another client
    app.upload(other, "upload_overview", "bad.json", b"{}")
    assert any("rejected" in e.value for e in other.error)
    assert _names(upload_dir) == ["mine.json"] and not list(upload_dir.glob(".tmp-*"))
