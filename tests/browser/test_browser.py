"""Real browser test: `streamlit run app.py` on localhost, headless Chromium at 1,600 px.

- Every page renders without a Streamlit exception block, its main tables fit the page (no sideways scrolling:
  each data grid's scrollWidth ≤ its clientWidth), and a full-page screenshot goes to artifacts/screenshots/
  (gitignored).
- A report written by `python -m dashboard report` opens from file:// with every figure drawn, no network request
  and no page-wide sideways scrolling.
- Uploading a CSV with a wrong schema shows an st.error.

Needs Debian's `chromium` and `chromium-driver` (.ci/run installs them) and selenium; skips cleanly without.
The first full page load of a freshly started server is a benchmark that uses this file's helpers:
tests/benchmarks/bench_first_page.py (run on demand; it prints its figures).
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

import app_page_list

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
SHOTS = ARTIFACTS / "screenshots"
FIXTURES = ROOT / "tests" / "fixtures" / "app"
# url_path of each page in app.py's st.navigation ("/" runs the Overview too: app_pages/home.py).
PAGES = {page: page for page in app_page_list.PAGES}
WIDTH, HEIGHT = 1600, 1000
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--window-size={WIDTH},{HEIGHT}"]


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


def _start_server(port: int | None = None, script: str = "app.py"):
    """A fresh `streamlit run app.py` (the app's synthetic fixture run on the source list); (process, url) once
    its health endpoint answers."""
    port = port or _free_port()
    env = dict(os.environ, PROJLAB_EXTRA_RUNS=str(FIXTURES / "synthetic_a.json"))
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", script, "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read().strip() == b"ok":
                return proc, url
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            log.seek(0)
            pytest.fail(f"streamlit did not start: {log.read().decode()[-2000:]}")
        time.sleep(0.1)


def _stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def server():
    proc, url = _start_server()
    yield url
    _stop(proc)


def _fresh_browser(profile: str):
    """Headless Chromium on an empty profile (no cache, no compiled code from earlier visits)."""
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM
    for flag in CHROME_FLAGS + [f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "SEVERE"})
    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    drv.set_page_load_timeout(60)
    return drv


@pytest.fixture(scope="module")
def browser():
    profile = tempfile.mkdtemp(prefix="projlab-chromium-")
    drv = _fresh_browser(profile)
    yield drv
    drv.quit()
    shutil.rmtree(profile, ignore_errors=True)


# Settled: the script run is over (the app root's data-test-script-state, which Streamlit's own e2e tests read), a
# title is on the page, and every chart has its plotly SVG (a chart still loading its library shows a skeleton).
_SETTLED_JS = """
const app = document.querySelector('[data-testid="stApp"]');
if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
if (!document.querySelector('[data-testid="stMain"] h1')) return false;
if (document.querySelector('[data-testid="stSkeleton"]')) return false;
return [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].every(c => c.querySelector('.main-svg'));
"""


def _wait_rendered(drv, timeout=60, quiet_s=1.0) -> float:
    """Wait until the page is settled (_SETTLED_JS) and stays so for `quiet_s`; return the time.perf_counter() at
    which it became settled for good."""
    deadline = time.time() + timeout
    quiet_since = None
    while time.time() < deadline:
        if drv.execute_script(_SETTLED_JS):
            quiet_since = quiet_since or time.perf_counter()
            if time.perf_counter() - quiet_since > quiet_s:
                return quiet_since
        else:
            quiet_since = None
        time.sleep(0.05)
    raise AssertionError(f"page did not finish rendering in {timeout} s: {drv.current_url}")


# Two animation frames after a change (a resize, a tab shown): the layout, the resize observers the data grids and
# plotly's responsive charts use, and the paint they cause have all run by then.
_TWO_FRAMES_JS = "const done = arguments[arguments.length - 1]; " \
                 "requestAnimationFrame(() => requestAnimationFrame(() => done(true)));"


def _laid_out(drv, timeout=30) -> None:
    """Wait until the page has laid itself out again after a change and every visible chart is drawn (_SETTLED_JS)."""
    deadline = time.time() + timeout
    while True:
        drv.execute_async_script(_TWO_FRAMES_JS)
        if drv.execute_script(_SETTLED_JS):
            return
        if time.time() > deadline:
            raise AssertionError(f"page did not settle within {timeout} s of a change: {drv.current_url}")
        time.sleep(0.05)


def _full_page_screenshot(drv, path: Path) -> None:
    """Streamlit scrolls inside stMain, so grow the window to its content height for one screenshot."""
    height = drv.execute_script("const m = document.querySelector('[data-testid=\"stMain\"]');"
                                "return m ? m.scrollHeight : document.body.scrollHeight;")
    drv.set_window_size(WIDTH, min(int(height) + 120, 16000))
    _laid_out(drv)
    drv.save_screenshot(str(path))
    drv.set_window_size(WIDTH, HEIGHT)
    _laid_out(drv)


# Every rendered data grid (st.dataframe; a collapsed expander renders none) and the main block: how far each
# would scroll sideways. Glide data grids scroll inside their .dvn-scroller element.
_OVERFLOW_JS = """
const out = [];
document.querySelectorAll('[data-testid="stDataFrame"]').forEach((d, i) => {
  const s = d.querySelector('.dvn-scroller');
  if (s && s.clientWidth > 0) out.push({what: 'dataframe ' + i, scroll: s.scrollWidth, client: s.clientWidth});
});
document.querySelectorAll('[data-testid="stTable"]').forEach((d, i) =>
  out.push({what: 'table ' + i, scroll: d.scrollWidth, client: d.clientWidth}));
const m = document.querySelector('[data-testid="stMain"]');
out.push({what: 'main', scroll: m.scrollWidth, client: m.clientWidth});
return out;
"""


def _overflowing(drv) -> list[str]:
    return [f"{o['what']}: {o['scroll']} px of content in {o['client']} px"
            for o in drv.execute_script(_OVERFLOW_JS) if o["scroll"] > o["client"] + 1]


def _report_line(capsys, text: str) -> None:
    """Print a measurement into the pytest output (not captured) and keep it in artifacts/browser_timings.txt."""
    ARTIFACTS.mkdir(exist_ok=True)
    with open(ARTIFACTS / "browser_timings.txt", "a", encoding="utf-8") as f:
        f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {text}\n")
    with capsys.disabled():
        print(f"\n[browser] {text}")


def _default_run_score():
    from dashboard.documents import run_index
    from dashboard.model.run_kinds import default_run
    from dashboard.model.runs import list_runs, load_run_data, run_score

    path = default_run(list(run_index.metas(list_runs(), run_index.read()).values()))
    if path is None:
        return None
    from dashboard.model.sources import default_pair

    data = load_run_data(path)
    base, cand = default_pair(data)   # the pair the app opens on
    return run_score(data, base, cand).score


@pytest.mark.parametrize("page", list(PAGES))
def test_page_renders_fits_and_is_screenshotted(server, browser, page):
    from selenium.webdriver.common.by import By

    browser.get(f"{server}/{PAGES[page]}")
    _wait_rendered(browser)
    SHOTS.mkdir(parents=True, exist_ok=True)
    errors = browser.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
    assert not errors, f"{page}: {errors[0].text[:500]}"
    title = browser.find_element(By.CSS_SELECTOR, "h1").text
    assert title, f"{page}: no title"
    assert not _overflowing(browser), f"{page} scrolls sideways at {WIDTH} px: {_overflowing(browser)}"
    _full_page_screenshot(browser, SHOTS / f"{page}.png")
    for i, tab in enumerate(browser.find_elements(By.CSS_SELECTOR, '[role="tab"]')[1:], start=1):
        tab.click()  # a hidden tab's tables have no width until shown
        _laid_out(browser)
        assert not _overflowing(browser), f"{page} tab {tab.text!r} scrolls sideways: {_overflowing(browser)}"
        _full_page_screenshot(browser, SHOTS / f"{page}_tab{i}.png")
    if page == "overview":
        text = browser.find_element(By.CSS_SELECTOR, '[data-testid="stMain"]').text
        assert "1.3012×" in text  # the official table, always quoted for reference
        first = _default_run_score()
        if first is not None:  # the app opens on the most complete committed run: its score is on the page
            assert f"{first:.4f}×" in text


def test_report_opens_offline_in_chromium(browser, tmp_path, capsys):
    """`python -m dashboard report` on the app's synthetic run: the HTML opens from file:// with every figure
    drawn by the inline plotly.js, fetches nothing, and does not scroll sideways at 1,600 px."""
    from selenium.webdriver.common.by import By

    out = subprocess.run([sys.executable, "-m", "dashboard", "report", str(FIXTURES / "synthetic_a.json"),
                          "--out", str(tmp_path), "--format", "html"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    html = next(tmp_path.glob("*.html"))
    browser.get_log("browser")  # drop what earlier pages logged
    browser.get(html.as_uri())
    deadline = time.time() + 30
    figs = drawn = 0
    while time.time() < deadline:
        figs = len(browser.find_elements(By.CSS_SELECTOR, ".plotly-graph-div"))
        drawn = len(browser.find_elements(By.CSS_SELECTOR, ".plotly-graph-div .main-svg"))
        if figs and drawn >= figs:
            break
        time.sleep(0.2)
    assert figs >= 4 and drawn >= figs, f"{drawn} of {figs} report figures drawn"
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)"
                                     ".filter(n => !n.startsWith('file:') && !n.startsWith('data:'))")
    assert not fetched, f"the report fetched {fetched}"
    severe = [e["message"] for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert not severe, severe
    wide = browser.execute_script("return [document.documentElement.scrollWidth, "
                                  "document.documentElement.clientWidth]")
    assert wide[0] <= wide[1] + 1, f"the report scrolls sideways: {wide}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(WIDTH, min(int(height) + 50, 16000))
    browser.execute_async_script(_TWO_FRAMES_JS)
    browser.save_screenshot(str(SHOTS / "report.png"))
    browser.set_window_size(WIDTH, HEIGHT)
    _report_line(capsys, f"report {html.name}: {html.stat().st_size / 1e6:.2f} MB, {figs} figures drawn offline")


def test_uploading_a_bad_csv_shows_an_error(server, browser):
    from selenium.webdriver.common.by import By

    browser.get(server)
    _wait_rendered(browser)
    browser.find_element(By.XPATH, "//*[contains(text(), 'Upload a run file or a per-shape CSV')]").click()
    deadline = time.time() + 30   # opening the expander reruns the page, which then draws the uploader
    while not browser.find_elements(By.CSS_SELECTOR, 'input[type="file"]') and time.time() < deadline:
        time.sleep(0.2)
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
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "overview_bad_upload.png"))
    assert "bad_columns.csv" in text and "baseline_us" in text, text
    assert not browser.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')


def _sidebar_choice(drv) -> str:
    """The sidebar's line that says what is shown: source, baseline, candidate."""
    from selenium.webdriver.common.by import By

    return " ".join(e.text for e in drv.find_elements(By.CSS_SELECTOR, '[data-testid="stSidebarUserContent"] '
                                                                          '[data-testid="stMarkdownContainer"]'))


def _picker_values(drv, timeout=30) -> str:
    """The source, baseline and candidate pickers' values: their popover under the sidebar's line, opened to read
    them and closed again (a closed popover's widgets are not in the page)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    drv.find_element(By.CSS_SELECTOR, '[data-testid="stSidebar"] [data-testid="stPopoverButton"]').click()
    inputs = '[data-testid="stPopoverBody"] [data-testid="stSelectbox"] input'
    deadline = time.time() + timeout
    while not drv.find_elements(By.CSS_SELECTOR, inputs) and time.time() < deadline:
        time.sleep(0.2)
    text = " ".join(e.get_attribute("value") or "" for e in drv.find_elements(By.CSS_SELECTOR, inputs))
    drv.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    while drv.find_elements(By.CSS_SELECTOR, '[data-testid="stPopoverBody"]') and time.time() < deadline:
        time.sleep(0.2)
    return text


def _wait_sidebar(drv, *words, timeout=30) -> tuple[str, str]:
    """The sidebar's line once it contains `words` (it is written after the page's first data load), and the
    pickers' values then."""
    deadline = time.time() + timeout
    text = _sidebar_choice(drv)
    while not all(w in text for w in words) and time.time() < deadline:
        time.sleep(0.3)
        text = _sidebar_choice(drv)
    return text, _picker_values(drv)


def _nav(drv, page: str) -> None:
    """Click the sidebar navigation link of `page` (a page switch inside the session, as a user makes it)."""
    from urllib.parse import urlparse

    from selenium.webdriver.common.by import By

    links = drv.find_elements(By.CSS_SELECTOR, '[data-testid="stSidebarNav"] a')
    next(a for a in links if urlparse(a.get_attribute("href")).path.strip("/") == PAGES[page]).click()


def _seed036_sweep() -> str | None:
    """The oldest committed plan sweep of baseline and seed036 that scores both at every shape: a run other than
    the one the app opens on, so a ?source= link to it has something to prove."""
    from dashboard.documents import run_index
    from dashboard.model.run_kinds import SWEEP, newest_first
    from dashboard.model.runs import list_runs

    # the committed run index (tests/dashboard/test_run_index.py holds it to the files) instead of every file read
    metas = [m for m in run_index.metas(list_runs(), run_index.read()).values() if m is not None and m.kind == SWEEP
             and m.workload ==
             "muse_bf16_proj" and {"baseline", "seed036"} <= set(m.candidates) and m.scored >= 2]
    return newest_first(metas)[-1].path.name if metas else None


def test_a_shared_url_reproduces_the_view(server, browser):
    """A link with ?source=&baseline=&candidate= opens that view; the choice stays in the address and survives a
    switch to another page through the sidebar and a reload."""
    from urllib.parse import parse_qs, urlparse

    from selenium.webdriver.common.by import By

    from dashboard.model.runs import load_run_data, run_score

    run = _seed036_sweep()
    if run is None:
        pytest.skip("no committed sweep of baseline and seed036")
    path = ROOT / "datasets" / "runs" / run
    score = f"{run_score(load_run_data(path), 'baseline', 'seed036').score:.4f}×"
    browser.get(f"{server}/shapes?source={run}&baseline=baseline&candidate=seed036")
    _wait_rendered(browser)
    line, pickers = _wait_sidebar(browser, run, "seed036")
    # the Source line names the file; the pickers show its date, label and candidates (dashboard.model.sources.run_text)
    assert run in line and "seed036" in line and "seed036" in pickers, (line, pickers)
    _nav(browser, "roofline")
    _wait_rendered(browser)
    assert browser.current_url.split("?")[0].endswith("/roofline")
    line, pickers = _wait_sidebar(browser, run, "seed036")
    # the Source line names the file; the pickers show its date, label and candidates (dashboard.model.sources.run_text)
    assert run in line and "seed036" in line and "seed036" in pickers, (line, pickers)
    query = parse_qs(urlparse(browser.current_url).query)
    assert query.get("source") == [run] and query.get("candidate") == ["seed036"], browser.current_url
    _nav(browser, "overview")
    _wait_rendered(browser)
    browser.refresh()
    _wait_rendered(browser)
    line, pickers = _wait_sidebar(browser, run, "seed036")
    main = browser.find_element(By.CSS_SELECTOR, '[data-testid="stMain"]').text
    assert run in line and score in main, (browser.current_url, line, pickers, main[:300])
    assert not browser.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')


def test_overview_has_its_own_address_too(server, browser):
    """/overview (the address pattern of every other page) opens the Overview itself, with the same source choice
    a ?source= link carries, and no "Page not found"."""
    from selenium.webdriver.common.by import By

    run = _seed036_sweep()
    if run is None:
        pytest.skip("no committed sweep of baseline and seed036")
    browser.get(f"{server}/overview?source={run}&baseline=baseline&candidate=seed036")
    _wait_rendered(browser)
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "Page not found" not in body, body[:300]
    assert browser.find_element(By.CSS_SELECTOR, '[data-testid="stMain"] h1').text.startswith("Overview")
    line, pickers = _wait_sidebar(browser, run, "seed036")
    # the Source line names the file; the pickers show its date, label and candidates (dashboard.model.sources.run_text)
    assert run in line and "seed036" in line and "seed036" in pickers, (line, pickers)
    assert not browser.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
