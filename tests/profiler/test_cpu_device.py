"""A CPU run as a user without a GPU makes one: `python -m profiler run --device cpu` through the command line on a
small workload, the baseline plan against a module running the same product, then `summarize`, `table` and `compare`
on its file: a score (or, where the canary finds the paired baseline at another speed on a loaded machine, no
score and the shapes that made it so), the baseline's SOL in (0, 100 %], no nan/None/? anywhere, aligned columns,
the plan's routing shown apart, and no FAST/SLOW from another device's band (the CPU has no repeat evidence: no
verdict, said so)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = ROOT / "tests" / "fixtures" / "workloads" / "tiny.json"
SAME_PRODUCT = ROOT / "tests" / "fixtures" / "app" / "cpu" / "same_product.py"
UNKNOWN = re.compile(r"\b(nan|NaN|None)\b|(?:^|[\s|(/\[])\?(?:[\s|)/\]]|$)")


def _cli(*args, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cpu") / "cpu-run.json"
    done = _cli("-m", "profiler", "run", "--device", "cpu", "--workload", str(WORKLOAD), "--plan", "baseline",
                "--candidate", str(SAME_PRODUCT), "--max-seconds-per-shape", "0.2", "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done.stdout + done.stderr


def _disturbed(path: Path) -> set[str]:
    """The shapes where the run's canary found the paired baseline at another speed than in a clean worker."""
    return {d["key"] for d in json.loads(path.read_text())["canary"]["shapes"]}


def test_the_run_prints_its_progress_and_labels_its_device(cpu_run):
    path, log = cpu_run
    assert re.search(r"canary: \d+/\d+", log) and "shapes: 4/4" in log
    run = json.loads(path.read_text())
    assert run["environment"]["gpu"].startswith("CPU: ") and run["environment"]["device"] == "cpu"
    floors = [p for p in run["probes"] if p.get("derived")]
    measured = [p for p in run["probes"] if not p.get("derived")]
    assert len(floors) == 4 and measured and min(p["bytes"] for p in measured) >= 1 << 20   # past the caches
    assert all(r["dispatch_us"] > 0 for r in run["results"] if r["candidate"] == "baseline")
    assert not any("dispatch_us" in r for r in run["results"] if r["candidate"] != "baseline")
    assert run["canary"]["band_evidence"]["source"] and "H200" not in json.dumps(run["canary"])


def test_summarize_scores_it_with_the_device_named(cpu_run):
    path, _ = cpu_run
    disturbed = _disturbed(path)
    done = _cli("-m", "dashboard", "summarize", str(path))
    assert done.returncode == (3 if disturbed else 0), done.stdout + done.stderr
    out = done.stdout
    if disturbed:   # a loaded machine: the canary found the paired baseline at another speed, and no score is made
        assert all(key in done.stderr for key in disturbed) and "canary: baseline disturbed" in done.stderr, done.stderr
    else:
        assert re.search(r"score \(geometric mean of load ratios\): \d+\.\d+", out), out
    assert "device: CPU: " in out and "host dispatch included" in out and "routing" in out
    assert not UNKNOWN.search(out), out


def test_table_has_the_baseline_below_its_floor_never_and_aligned_columns(cpu_run):
    path, _ = cpu_run
    out = _cli("-m", "dashboard", "table", str(path), "--baseline", "same_product", "--candidate", "baseline").stdout
    assert not UNKNOWN.search(out), out
    rows = [line for line in out.splitlines() if re.match(r"  (one|four)/\w+ +\d", line)]
    assert len(rows) == 4, out
    # every cell right-aligned in its column: the SOL cells end where the header's SOL ends
    header = next(line for line in out.splitlines() if "floor µs" in line and "SOL" in line)
    end = header.index("SOL") + len("SOL")
    sols = [float(line[:end].split()[-1].rstrip("%")) for line in rows]
    assert all(line[end - 1] == "%" for line in rows), out
    assert all(0 < s <= 100 for s in sols), sols                       # the baseline's SOL (it is the candidate here)


def test_compare_of_the_same_product_gives_no_verdict_and_no_other_devices_band(cpu_run):
    """Every load gets "no verdict" (the CPU has no repeat evidence), never FAST/SLOW nor another device's band. On
    a loaded machine the canary may find the paired baseline at another speed than the clean one: then the loads
    holding a disturbed shape have no score and the compare says which shapes and why (exit 3), the others still
    say "no verdict"."""
    path, _ = cpu_run
    disturbed = _disturbed(path)
    blocked = {key.split("/")[0] for key in disturbed}
    for extra in ([], ["--shapes"]):
        done = _cli("-m", "dashboard", "compare", f"{path}:baseline", f"{path}:same_product", *extra)
        out = done.stdout
        assert done.returncode == (3 if disturbed else 0), out + done.stderr
        assert "FAST" not in out and "SLOW" not in out and "H200" not in out, out
        rows = {line.split()[0]: line for line in out.splitlines() if re.match(r"  (one|four)(/\w+)? ", line)}
        shapes = {"one/proj", "one/gate", "four/proj", "four/gate"} if extra else set()
        assert set(rows) == {"one", "four"} | shapes, out
        for name, line in rows.items():
            refused = name in disturbed or name in blocked
            assert ("no verdict: no repeat evidence on CPU: " in line) != refused, out
        assert all(key in out + done.stderr for key in disturbed), out + done.stderr
        assert not UNKNOWN.search(out), out
