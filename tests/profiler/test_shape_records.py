"""The shape task's records pinned: a fake-timer sweep (CPU, the worker in this process: inprocess_worker.py;
KeyedFakeTimer: samples that depend only on the task; fixed input salt) gives the
records in data/pinned_shape_records.json -- results, pairs, failures and each shape's info -- so a change to how the
shape task keeps its per-candidate state cannot change what it records. A key a record gains later is allowed; every
pinned key must keep its value. Regenerate (only for an intended change of the records) with
`PIN_SHAPE_RECORDS=1 python3 -m pytest tests/profiler/test_shape_records.py`."""
import json
import math
import os
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from profiler import wrong  # noqa: E402
from profiler.measure.policy import SWEEP  # noqa: E402
from inprocess_worker import in_process_worker  # noqa: E402,F401  (the fixture)

FAKE = str(Path(__file__).with_name("fake_device.py"))
PINNED = Path(__file__).with_name("data") / "pinned_shape_records.json"
VOLATILE = {"elapsed_s", "worker"}   # wall-clock and process numbering, not the shape task's output
SPECS = [wrong.spec(wrong.TorchLinear), wrong.spec(wrong.TorchLinear), wrong.spec(wrong.NaNRow),
         wrong.spec(wrong.StaleOutput), wrong.spec(wrong.TorchLinear)]


def _shapes(mode: str):
    from profiler.commands.sweep import select_shapes

    if mode == "stream":   # ~1 MB a copy: ~180 copies of 3 x L2
        return [s | {"N": 512, "K": 1024} for s in select_shapes("official") if (s["family"], s["M"]) == ("o", 1)]
    small = {"o": {"N": 64, "K": 256}, "router": {"N": 32, "K": 512}}
    return [s | small[s["family"]] for s in select_shapes("official")
            if s["family"] in small and s["M"] in (1, 16)]


def _records(tmp_path, mode: str) -> dict:
    from datasets.runfile import load_run
    from profiler.commands.sweep import SweepSettings, run_sweep

    out = tmp_path / f"{mode}.json"
    run_sweep(SPECS if mode == "cold" else SPECS[:3], _shapes(mode), out, label=mode, device="cpu", log=lambda m: None, worker_init=f"{FAKE}:install_keyed",
              settings=SweepSettings(mode=mode, probes=False, canary="off", input_salt=12345,
                                     timing=replace(SWEEP, max_seconds=30.0)))
    run = load_run(out)

    def clean(rec):
        return {k: v for k, v in rec.items() if k not in VOLATILE}

    return {"results": [clean(r) for r in run["results"]], "pairs": [clean(p) for p in run["pairs"]],
            "failures": [clean(f) for f in run["failures"]],
            "info": {k: clean(v) for k, v in sorted(run.get("shape_info", {}).items())}}


def _contains(pinned, now, path="") -> list[str]:
    """Where `now` differs from `pinned` (dict keys only `now` has are allowed)."""
    if isinstance(pinned, dict):
        if not isinstance(now, dict):
            return [f"{path}: {now!r} is not a dict"]
        return [d for k, v in pinned.items()
                for d in (_contains(v, now[k], f"{path}.{k}") if k in now else [f"{path}.{k}: missing"])]
    if isinstance(pinned, list):
        if not isinstance(now, list) or len(now) != len(pinned):
            return [f"{path}: length {len(now) if isinstance(now, list) else now!r} != {len(pinned)}"]
        return [d for i, (a, b) in enumerate(zip(pinned, now)) for d in _contains(a, b, f"{path}[{i}]")]
    if isinstance(pinned, float) and isinstance(now, float):
        # Error terms are computed from real CPU math (the element rule's |y - exact| / bound), whose last bits differ
        # between BLAS builds; a misaligned record moves a value wholesale, far past this.
        return [] if math.isclose(pinned, now, rel_tol=1e-6, abs_tol=1e-12) else [f"{path}: {now!r} != pinned {pinned!r}"]
    return [] if pinned == now else [f"{path}: {now!r} != pinned {pinned!r}"]


def test_a_fake_timer_sweep_gives_the_pinned_records(tmp_path, in_process_worker):
    now = {mode: _records(tmp_path, mode) for mode in ("cold", "stream")}
    if os.environ.get("PIN_SHAPE_RECORDS"):
        PINNED.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    pinned = json.loads(PINNED.read_text())
    assert now["cold"]["results"] and now["cold"]["pairs"] and now["cold"]["failures"]
    diffs = _contains(pinned, now)
    assert not diffs, diffs[:10]
