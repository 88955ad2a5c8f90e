"""The run index (dashboard/documents/run_index.json) is what the committed run files give, like RESULTS.md; a run that is not
in it (a new run, an extra run, an upload) or differs from its entry is read directly."""
import json
import shutil
from pathlib import Path

from dashboard.documents import run_index
from dashboard.model import run_kinds
from dashboard.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SYNTHETIC = ROOT / "tests" / "fixtures" / "app" / "synthetic_a.json"   # SYNTHETIC run (test fixture)


def test_the_committed_index_is_what_the_committed_runs_give():
    assert run_index.RUN_INDEX_JSON.read_text(encoding="utf-8") == run_index.render(run_index.build()), \
        "dashboard/documents/run_index.json is stale: regenerate it with `python -m dashboard index --out dashboard/documents/run_index.json`"


def test_a_run_not_in_the_index_or_changed_since_is_read_directly(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    indexed = folder / "2026-11-01_nvidia-h200_a.json"
    shutil.copy(SYNTHETIC, indexed)
    (tmp_path / "index.json").write_text(run_index.render(run_index.build(folder)))
    index = run_index.read(tmp_path / "index.json", folder)
    read = []

    def read_meta(path):
        read.append(path.name)
        return run_kinds.run_meta(path)

    new = folder / "2026-11-02_nvidia-h200_b.json"
    shutil.copy(SYNTHETIC, new)
    metas = run_index.metas([indexed, new], index, read_meta)
    assert read == [new.name] and metas[indexed] == run_kinds.run_meta(indexed)
    indexed.write_text(indexed.read_text() + "\n")   # not the indexed file any more (another size): read again
    metas = run_index.metas([indexed], index, read_meta)
    assert read == [new.name, indexed.name] and metas[indexed] == run_kinds.run_meta(indexed)


def test_the_index_command_writes_the_index_and_refuses_a_missing_folder(tmp_path, capsys):
    shutil.copy(SYNTHETIC, tmp_path / "2026-11-01_nvidia-h200_a.json")
    out = tmp_path / "out" / "index.json"
    assert main(["index", "--runs", str(tmp_path), "--out", str(out)]) == 0
    entries = json.loads(out.read_text())["runs"]
    assert [e["file"] for e in entries] == ["2026-11-01_nvidia-h200_a.json"] and entries[0]["scored"] == 2
    assert main(["index", "--runs", str(tmp_path / "typo")]) == 2
    assert "no such folder" in capsys.readouterr().err
