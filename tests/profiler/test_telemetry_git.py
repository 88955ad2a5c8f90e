"""Which commit a run records: the repository rooted at the tree, never an enclosing checkout's HEAD (the device
gets a copy of the tree under the main checkout's .scratch/, where `git rev-parse HEAD` would find the main one)."""
import shutil
import subprocess

import pytest

from profiler.measure.telemetry import git_info

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _repo(path):
    git = lambda *a: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *a], cwd=path,
                                    check=True, capture_output=True, text=True)
    git("init", "-q")
    (path / "f.txt").write_text("x")
    git("add", "f.txt")
    git("commit", "-qm", "one")
    return git("rev-parse", "HEAD").stdout.strip()


def test_a_tree_copied_inside_another_checkout_records_the_sha_it_was_given(tmp_path, monkeypatch):
    outer = _repo(tmp_path)
    copy = tmp_path / ".scratch" / "explain"
    copy.mkdir(parents=True)
    monkeypatch.setenv("PROJLAB_GIT_SHA", "1" * 40)
    assert git_info(copy) == {"git_sha": "1" * 40, "git_dirty": None}
    assert git_info(tmp_path)["git_sha"] == "1" * 40  # an explicit sha wins everywhere
    monkeypatch.delenv("PROJLAB_GIT_SHA")
    assert git_info(tmp_path)["git_sha"] == outer  # the repository's own root reports its HEAD
    assert git_info(copy) == {"git_sha": None, "git_dirty": False}
