"""Real browser test: `streamlit run app.py` on localhost, headless Chromium opens every page, waits for it to
finish rendering, asserts there is no Streamlit exception block, and saves a screenshot per page to
artifacts/screenshots/ (gitignored). Also uploads a CSV with a wrong schema and expects an st.error.

Needs Debian's `chromium` and `chromium-driver` (.ci/run installs them) and selenium; skips cleanly without.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
FIXTURES = ROOT / "tests" / "fixtures" / "app"
# url_path of each page in app.py's st.navigation; the default page (Overview) lives at "/".
PAGES = {"overview": "", "where_time_goes": "where_time_goes", "kernels": "kernels", "shapes": "shapes",
         "compare": "compare", "roofline": "roofline", "probes": "probes", "planner": "planner", "dispatch": "dispatch",
         "ledger": "ledger", "run": "run", "reports": "reports"}
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1400,1000"]


def _find(*names):
    return next((shutil.which(n) for n in names if shutil.which(n)), None)


CHROMIUM = _find("chromium", "chromium-browser")
DRIVER = "/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else _find("chromedriver")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER),
                                reason="needs Debian's chromium and chromium-driver (apt-get install chromium "
                                       "chromium-driver)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    env = dict(os.environ, PROJLAB_EXTRA_RUNS=str(FIXTURES / "synthetic_a.json"))
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read().strip() == b"ok":
                break
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            log.seek(0)
            pytest.fail(f"streamlit did not start: {log.read().decode()[-2000:]}")
        time.sleep(0.3)
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="projlab-chromium-")
    opts = Options()
    opts.binary_location = CHROMIUM
    for flag in CHROME_FLAGS + [f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    drv.set_page_load_timeout(60)
    yield drv
    drv.quit()
    shutil.rmtree(profile, ignore_errors=True)


def _wait_rendered(drv, timeout=60):
    """Main content is there, the 'running' indicator is gone, and it stays gone for a moment."""
    from selenium.webdriver.common.by import By

    deadline = time.time() + timeout
    quiet_since = None
    while time.time() < deadline:
        main = drv.find_elements(By.CSS_SELECTOR, '[data-testid="stMain"] h1, [data-testid="stMainBlockContainer"] h1')
        running = drv.find_elements(By.CSS_SELECTOR, '[data-testid="stStatusWidget"]')
        skeleton = drv.find_elements(By.CSS_SELECTOR, '[data-testid="stSkeleton"]')
        if main and not running and not skeleton:
            quiet_since = quiet_since or time.time()
            if time.time() - quiet_since > 1.0:
                return
        else:
            quiet_since = None
        time.sleep(0.2)
    raise AssertionError(f"page did not finish rendering in {timeout} s: {drv.current_url}")


def _full_page_screenshot(drv, path: Path) -> None:
    """Streamlit scrolls inside stMain, so grow the window to its content height for one screenshot."""
    height = drv.execute_script("const m = document.querySelector('[data-testid=\"stMain\"]');"
                                "return m ? m.scrollHeight : document.body.scrollHeight;")
    drv.set_window_size(1400, min(int(height) + 120, 12000))
    time.sleep(0.8)  # let plotly re-layout at the new size
    drv.save_screenshot(str(path))
    drv.set_window_size(1400, 1000)


def _default_run_score():
    from dashboard.runs import default_run, list_runs, load_run_data, run_score, scored_candidates

    path = default_run(list_runs())
    if path is None:
        return None
    data = load_run_data(path)
    cands = scored_candidates(data)
    base = "baseline" if "baseline" in cands else cands[0]
    return run_score(data, base, [c for c in cands if c != base][-1]).score


@pytest.mark.parametrize("page", list(PAGES))
def test_page_renders_without_exception(server, browser, page):
    from selenium.webdriver.common.by import By

    browser.get(f"{server}/{PAGES[page]}")
    _wait_rendered(browser)
    SHOTS.mkdir(parents=True, exist_ok=True)
    _full_page_screenshot(browser, SHOTS / f"{page}.png")
    errors = browser.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
    assert not errors, f"{page}: {errors[0].text[:500]}"
    title = browser.find_element(By.CSS_SELECTOR, "h1").text
    assert title, f"{page}: no title"
    if page == "overview":
        text = browser.find_element(By.CSS_SELECTOR, '[data-testid="stMain"]').text
        assert "1.3012×" in text  # the official table, always quoted for reference
        first = _default_run_score()
        if first is not None:  # the app opens on the most complete committed run: its score is on the page
            assert f"{first:.4f}×" in text


def test_uploading_a_bad_csv_shows_an_error(server, browser):
    from selenium.webdriver.common.by import By

    browser.get(server)
    _wait_rendered(browser)
    browser.find_element(By.XPATH, "//*[contains(text(), 'Upload a run file or a per-shape CSV')]").click()
    field = browser.find_element(By.CSS_SELECTOR, 'input[type="file"]')
    field.send_keys(str(FIXTURES / "bad_columns.csv"))
    deadline = time.time() + 30
    text = ""
    while time.time() < deadline:
        alerts = browser.find_elements(By.CSS_SELECTOR, '[data-testid="stAlert"]')
        text = " ".join(a.text for a in alerts)
        if "rejected" in text:
            break
        time.sleep(0.3)
    browser.save_screenshot(str(SHOTS / "overview_bad_upload.png"))
    assert "bad_columns.csv" in text and "baseline_us" in text, text
    assert not browser.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
