"""The Overview shows `best` against the best of the run's peers (dashboard/model/peers.py) on the SYNTHETIC peers run,
with the failing peer shown failing."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PEERS_RUN = ROOT / "tests" / "fixtures" / "runs" / "2000-01-05_synthetic_synthetic-peers.json"


def test_overview_shows_best_against_the_strongest_peer(app, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("PROJLAB_EXTRA_RUNS", str(PEERS_RUN))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("app_pages/overview.py")
    at.query_params.update(source=PEERS_RUN.name, baseline="baseline", candidate="best")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("best vs the strongest peer (derived)" in h.value for h in at.subheader)
    figures = app.figures(at)
    assert figures["best vs best of peers (derived)"] == f"{(47 / 40 * 1.25 * 1.25 * 1.125 * 1.5 * 1.5) ** (1 / 6):.4f}×"
    assert any("flashinfer failed at 2 scored shape(s)" in w.value for w in at.warning)
