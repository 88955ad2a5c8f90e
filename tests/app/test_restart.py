"""A code change shows after a restart with no cache folder deleted: the app keeps nothing on disk that an edit to
dashboard/ or datasets/ could leave stale. Two app processes share one home folder (where Streamlit's disk cache
would live); between them dashboard/model/metrics.py's FLOP convention is edited in a copy of the code, and the second
process must show the new FLOPs on the committed run the app opens on."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RENDER = """
import json
from streamlit.runtime.caching.storage.local_disk_cache_storage import LocalDiskCacheStorageManager
from streamlit.testing.v1 import AppTest, app_test
# AppTest keeps st.cache_data in memory; a server keeps persist="disk" entries under ~/.streamlit/cache, as here
app_test.MemoryCacheStorageManager = LocalDiskCacheStorageManager
at = AppTest.from_file("app.py", default_timeout=240)
at.switch_page("app_pages/shapes.py")
at.run()
assert not at.exception, [e.value for e in at.exception]
table = next(df.value for df in at.dataframe if "gflop" in df.value)
print(json.dumps(float(table["gflop"].sum())))
"""


def _copy(tmp: Path) -> Path:
    """The app's code copied (so it can be edited); the run files and kernels linked (read only)."""
    app = tmp / "app"
    app.mkdir()
    shutil.copy(ROOT / "app.py", app)
    for folder in ("app_pages", "ui", "dashboard", "datasets"):
        shutil.copytree(ROOT / folder, app / folder, ignore=shutil.ignore_patterns("runs", "__pycache__"))
    (app / "datasets" / "runs").symlink_to(ROOT / "datasets" / "runs")
    (app / "kernels").symlink_to(ROOT / "kernels")
    return app


def _gflop(app: Path, home: Path) -> float:
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(app)}
    env.pop("PROJLAB_EXTRA_RUNS", None)
    out = subprocess.run([sys.executable, "-c", RENDER], cwd=app, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_editing_the_flop_convention_shows_after_a_restart(tmp_path):
    app, home = _copy(tmp_path), tmp_path / "home"
    home.mkdir()
    before = _gflop(app, home)
    metrics = app / "dashboard" / "model" / "metrics.py"
    text = metrics.read_text()
    assert "return 2 * M * N * K" in text
    metrics.write_text(text.replace("return 2 * M * N * K", "return 4 * M * N * K"))
    after = _gflop(app, home)
    assert before > 0 and after == 2 * before
