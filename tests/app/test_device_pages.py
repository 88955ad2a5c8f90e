"""Every page with a run of another device as the source: a real CPU run (tests/fixtures/app/cpu_tiny.json, made by
`python -m profiler run --device cpu` on the tiny workload: the baseline plan against a module running the same
product) and a SYNTHETIC run labelled as an H100's (synthetic_a.json with that driver name, and a plan tuned on the
H200). No page shows None, nan or a bare ?; no H200 figure unless the line describes committed H200 data; each
page labels what the run's device is and is not."""
import json
import re

import pytest

CPU_RUN = "cpu_tiny.json"
H100 = "NVIDIA H100 80GB HBM3"
UNKNOWN = re.compile(r"\b(None|nan|NaN)\b|(?:^|[\s|(/])\?(?:[\s|)/]|$)")
# Lines that may name the H200: they describe committed H200 data (a cuBLASLt search or the write-up's probes left
# out or overlaid for this run, the Kernels page's committed explain run, the committed runs' plans and bands on pages
# that are not about the source run), or say where the committed runs come from.
H200_OK = re.compile(r"measured on NVIDIA H200, not|HBM read times of an H200|the committed runs: an H200|"
                     r"ncu .* on NVIDIA H200|tuned on NVIDIA H200|Tuned by profiler/commands/tune.py on NVIDIA H200|"
                     r"GPU: `NVIDIA H200`|measured on NVIDIA H200|an H200 for numbers comparable|Make one on the H200|"
                     r"nvidia-h200|^table cell: NVIDIA H200$")   # the Fleet page lists the committed runs by GPU


def _h100_run(app, tmp_path):
    run = json.loads((app.FIXTURES / "synthetic_a.json").read_text())
    run["environment"]["gpu"] = H100
    run["environment"]["plans_tuned_on"] = {"seed036": "NVIDIA H200"}
    run["label"] = "synthetic-h100"
    path = tmp_path / "2000-01-09_nvidia-h100-80gb-hbm3_synthetic-h100.json"
    path.write_text(json.dumps(run))
    return path


def _everything(at) -> list[str]:
    parts = [f"{k}: {e.value}" for k in ("title", "header", "subheader", "markdown", "caption", "error", "warning",
                                         "info", "success") for e in at.get(k)]
    parts += [f"metric: {m.label} {m.value}" for m in at.metric]
    # a table's text cells as shown (a missing number is drawn as the page's placeholder, not as text)
    parts += [f"table cell: {cell}" for df in at.dataframe for col in df.value.columns
              for cell in df.value[col] if isinstance(cell, str)]
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        parts += [f"trace: {t.get('name')}" for t in spec.get("data", []) if t.get("name")]
        parts += [f"annotation: {a.get('text')}" for a in spec.get("layout", {}).get("annotations", [])]
        title = spec.get("layout", {}).get("title")
        if title:
            parts.append(f"figure: {title.get('text') if isinstance(title, dict) else title}")
    return parts


@pytest.fixture
def device_runs(app, monkeypatch, tmp_path):
    h100 = _h100_run(app, tmp_path)
    monkeypatch.setenv("PROJLAB_EXTRA_RUNS", f"{app.FIXTURES / CPU_RUN}:{h100}")
    return {"cpu": f"run: {CPU_RUN}", "h100": f"run: {h100.name}"}


@pytest.mark.parametrize("which", ["cpu", "h100"])
def test_every_page_labels_the_runs_device_and_shows_no_unknown_as_a_symbol(app, device_runs, which):
    seen = {}
    for page in app.PAGES:
        at = app.open_page(page, device_runs[which], timeout=120)
        assert not at.exception, (page, [e.value for e in at.exception])
        text = _everything(at)
        bad = [line for line in text if UNKNOWN.search(re.sub(r"what would it take\?|\?source=\S*", "", line))]
        assert not bad, (page, bad[:5])
        h200 = [line for line in text if "H200" in line and not H200_OK.search(line)]
        assert not h200, (page, h200[:5])
        seen[page] = "\n".join(text)
    if which == "cpu":
        assert "not measured on this device" in seen["overview"]            # no SM clock on a CPU
        assert "host dispatch included" in seen["overview"] and "routing" in seen["overview"]
        assert "Probes — memory read curve" in seen["probes"]
        assert "shape floors (derived from the fastest rate)" in seen["probes"]
        assert "GB/s" in seen["roofline"] and "datasheet" not in seen["roofline"]
    else:
        assert "seed036: a plan tuned on NVIDIA H200, run here on NVIDIA H100 80GB HBM3" in seen["overview"]
        assert "python -m profiler tune" in seen["overview"]
        assert "H100 SXM datasheet 3.35 TB/s (reference)" in seen["roofline"]
        assert "4.8 TB/s" not in seen["roofline"]
