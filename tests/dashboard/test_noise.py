"""dashboard.model.noise: the one noise model — its verdict rule, its bands file against a regeneration from the committed
runs, identical routes never called FAST or SLOW across committed sweeps, real differences still found, no verdict
or "within noise" threshold anywhere else, and the `python -m dashboard compare` command."""
import itertools
import math
import os
import re
from functools import lru_cache
from pathlib import Path

import pytest

from dashboard.cli import main as cli
from dashboard.model import compare, noise, run_kinds, runs

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "datasets" / "runs"
FINAL = "2026-12-04_nvidia-h200_baseline-seed036-seed039-best-final.json.gz"
FINAL_B = "2026-12-04_nvidia-h200_baseline-vs-best-b-final.json.gz"
PINNED = "2026-12-03_nvidia-h200_baseline-seed036-seed039-best-pinned.json"
BAND_TEXT = re.compile(r"(within-run|cross-run) band.* ±\d+\.\d %, from \d+ ")


@pytest.mark.parametrize("lo, hi, verdict", [
    (1.02, 1.05, "FAST"), (0.95, 0.98, "SLOW"), (0.995, 1.005, "SAME"), (0.99, 1.01, "SAME"),
    (1.005, 1.03, "AMBIGUOUS"), (0.97, 1.0, "AMBIGUOUS"), (0.9, 1.1, "AMBIGUOUS"), (math.nan, math.nan, "NO SAMPLES")])
def test_verdict_rule(lo, hi, verdict):
    assert noise.verdict(lo, hi, 0.01) == verdict


@lru_cache(maxsize=None)
def _sweeps() -> tuple:
    return tuple(noise.sweeps())


@lru_cache(maxsize=None)
def _run(name: str) -> runs.RunData:
    loaded = {d.path.name: d for d in _sweeps()} if _sweeps.cache_info().currsize else {}
    return loaded.get(name) or runs.load_run_data(RUNS / name)


def test_bands_file_is_what_the_committed_runs_give():
    assert noise.BANDS_FILE.read_text() == noise.render(noise.derive(_sweeps())), \
        f"dashboard/model/noise_bands.json is stale: {noise.COMMAND}"


def test_bands_are_derived_per_kind_and_say_where_they_come_from():
    across = noise.band(noise.ACROSS, noise.OVERALL, "NVIDIA H200")
    within = noise.band(noise.WITHIN, noise.OVERALL, "NVIDIA H200")
    relative = noise.band(noise.ACROSS_RR, noise.OVERALL, "NVIDIA H200")
    # drift between runs is larger than the noise inside one, and a run's own baseline cancels most of it
    assert within.frac < relative.frac < across.frac
    assert BAND_TEXT.search(across.text()) and "repeated sweeps" in across.text()
    unknown = noise.band(noise.ACROSS, noise.LOAD, "NVIDIA B200", "M 1")   # never the H200's band
    assert not unknown.known and "no repeat evidence on NVIDIA B200" in unknown.text() and "H200" not in unknown.text()
    keyed = noise.band(noise.ACROSS, noise.SHAPE, "NVIDIA H200", noise.shape_key("router", 1))
    assert keyed.key == "router M 1" and "(router M 1)" in keyed.text()
    assert noise.band(noise.ACROSS, noise.SHAPE, "NVIDIA H200", "no such family M 1").key == noise.POOLED


def test_a_broken_bands_file_is_one_line(tmp_path):
    bad = tmp_path / "noise_bands.json"
    bad.write_text("{}")
    with pytest.raises(noise.NoiseError, match="noise_bands.json: cannot read"):
        noise.band(noise.ACROSS, noise.LOAD, path=bad)


def _same_route_groups() -> dict[tuple, list[runs.RunData]]:
    """(GPU model, workload, candidate, routes) → the committed sweeps, oldest first, where the candidate ran those
    identical routes at every scored shape."""
    groups = {}
    for data in _sweeps():
        table = noise._routes(data)
        for cand, g in table.groupby("candidate"):
            if len(g) == len(data.workload.shapes):
                sig = tuple(sorted(zip(g["load"], g["family"], g["route"])))
                groups.setdefault((noise.gpu_model(data), data.workload.name, cand, sig), []).append(data)
    return {k: sorted(v, key=lambda d: (str(d.run.get("created_utc")), d.path.name)) for k, v in groups.items()}


ALL_PAIRS = os.environ.get("PROJLAB_ALL_PAIRS") == "1"
GROUP_ALL_PAIRS = 12   # a group of up to this many sweeps is checked pair by pair (every group but two)


def _same_route_pairs() -> list[tuple[str, str, str]]:
    """(run a, run b, candidate) of one same-route group. Every pair in a group of up to GROUP_ALL_PAIRS sweeps; in
    a larger one (the baseline is in 64 sweeps, seed036 in 26: 2,300 pairs at a third of a second each), every pair
    among its newest GROUP_ALL_PAIRS sweeps, every pair at one commit (the back-to-back sweeps) and every sweep
    against the group's newest and oldest.
    PROJLAB_ALL_PAIRS=1 checks every pair of every group."""
    out = set()
    for (_, _, cand, _), datas in _same_route_groups().items():
        names = [d.path.name for d in datas]
        if ALL_PAIRS or len(names) <= GROUP_ALL_PAIRS:
            out |= {(a, b, cand) for a, b in itertools.combinations(names, 2)}
            continue
        commit = {d.path.name: (d.run.get("environment") or {}).get("git_sha") for d in datas}
        out |= {(a, b, cand) for a, b in itertools.combinations(names, 2) if commit[a] and commit[a] == commit[b]}
        out |= {(a, names[-1], cand) for a in names[:-1]} | {(names[0], b, cand) for b in names[1:]}
        out |= {(a, b, cand) for a, b in itertools.combinations(names[-GROUP_ALL_PAIRS:], 2)}
    return sorted(out)


def test_identical_routes_across_committed_sweeps_are_never_fast_or_slow():
    pairs = _same_route_pairs()
    # the back-to-back sweeps of 2026-12-04 and the pinned sweep of 2026-12-03 are among them
    assert (FINAL, FINAL_B, "best") in pairs
    assert (PINNED, FINAL, "baseline") in pairs
    wrong = []
    for a, b, cand in pairs:
        cmp = compare.compare_runs(_run(a), cand, _run(b), cand, n_boot=20)
        verdicts = [*cmp.loads["verdict"], *cmp.overall["verdict"]]
        if set(verdicts) - {"SAME", "AMBIGUOUS"}:
            wrong.append(f"{cand}: {a} vs {b}: {verdicts}")
        assert cmp.shapes["same_route"].all() and (cmp.shapes["verdict"] == "SAME ROUTE").all()
    assert not wrong, "\n".join(wrong[:10])


def test_real_differences_are_found_with_their_band():
    across = compare.compare_runs(_run(FINAL), "seed036", _run(FINAL_B), "best")
    row = across.overall.iloc[0]
    assert row["verdict"] == "FAST" and across.modes[compare.side_name(_run(FINAL_B), "best")] == noise.ACROSS_RR
    assert BAND_TEXT.search(row["band_source"]) and "cross-run" in row["band_source"]
    within = compare.compare_runs(_run(FINAL), "baseline", _run(FINAL), "best")
    row = within.overall.iloc[0]
    assert row["verdict"] == "FAST" and "within-run band" in row["band_source"]


def test_the_baseline_itself_across_runs_is_compared_raw():
    cmp = compare.compare_runs(_run(PINNED), "baseline", _run(FINAL), "baseline")
    assert set(cmp.modes.values()) == {noise.ACROSS}
    assert cmp.overall.iloc[0]["verdict"] in ("SAME", "AMBIGUOUS")


# Every verdict goes through dashboard.model.noise: no other file computes one or holds a "within noise" number.
VERDICT_RULE = re.compile(r"ci_(low|high)\s*[<>]=?\s*1\s*[+-]|(?<!y0=)(?<!y1=)1\s*[+-]\s*eps|EPS_DEFAULT|SAME band ±|±\d+(\.\d+)? ?% "
                          r"(SAME|band)|within ±\d")


def test_no_verdict_is_computed_without_the_noise_module():
    offenders = []
    for folder in ("dashboard", "app_pages"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "noise.py":
                continue
            text = path.read_text(encoding="utf-8")
            offenders += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in VERDICT_RULE.finditer(text)]
            if re.search(r'"(FAST|SLOW)" if', text):
                offenders.append(f"{path.relative_to(ROOT)}: assigns FAST/SLOW itself")
    for doc in ("README.md", "dashboard/README.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        offenders += [f"{doc}: {m.group(0)}" for m in re.finditer(r"within ±\d+ ?%|±\d+ ?% of 1", text)]
    assert not offenders, offenders


def test_cli_compare_prints_every_load_with_its_band(capsys):
    assert cli.main(["compare", f"{FINAL}:baseline", FINAL]) == 0
    out = capsys.readouterr().out
    assert "paired within one run" in out and out.count("within-run band ±") >= 7
    assert re.search(r"overall \(6 loads\)\s+1\.\d{4}\s+\[", out) and "FAST" in out
    assert "identical routes on both sides" in out


def test_cli_compare_shapes_marks_identical_routes(capsys):
    assert cli.main(["compare", f"{FINAL}:seed036", str(RUNS / FINAL_B), "--shapes"]) == 0
    out = capsys.readouterr().out
    assert "ratio of ratios" in out and "SAME ROUTE" in out and "decode 1/router" in out


@pytest.mark.parametrize("args, words", [
    (["nope.json", FINAL], "nope.json: no run file"),
    ([f"{FINAL}:zzz", FINAL], "no candidate 'zzz'"),
    ([f"{FINAL}:best", f"{FINAL}:best"], "compared with itself"),
    ([FINAL, "2026-12-01_nvidia-h200_baseline-vs-llama31_8b_decode-r5.json:baseline"], "holds workload"),
])
def test_cli_compare_bad_input_is_one_line_exit_2(capsys, args, words):
    assert cli.main(["compare", *args]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err


def test_sweeps_are_the_plan_sweeps_and_repeatability_runs():
    kinds = {run_kinds.run_meta(d.path).kind for d in _sweeps()}
    assert kinds <= {run_kinds.SWEEP, run_kinds.REPEAT}
