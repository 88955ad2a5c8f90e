"""The timing policy: one object per preset, and the run files it writes record what the committed H200 runs
recorded (the move into profiler/measure/policy.py changed no setting)."""
from dataclasses import asdict
from pathlib import Path

import pytest

from datasets.jsonfile import read_json
from profiler.commands import survey, tune_rules
from profiler.measure import policy
from profiler.worker.settings import SweepSettings

RUNS = Path(__file__).resolve().parents[2] / "datasets" / "runs"
# the flat keys the committed sweeps recorded -> the TimingPolicy field now recorded under settings["timing"]
TIMING_KEYS = {"min_pairs": "min_pairs", "rse_target": "rse_target", "max_seconds_per_shape": "max_seconds",
               "warmup_seconds": "warmup_seconds", "batch_rounds": "batch_rounds", "instances": "instances",
               "min_clock_fraction": "min_clock_fraction"}


def _settings(name: str) -> dict:
    return read_json(RUNS / name)["environment"]["settings"]


def test_a_sweep_records_the_settings_the_committed_sweeps_recorded():
    recorded = _settings("2026-12-01_nvidia-h200_baseline-vs-best-b-r28.json")
    mine = asdict(SweepSettings())
    assert {new: mine["timing"][new] for new in TIMING_KEYS.values()} == {new: recorded[old]
                                                                          for old, new in TIMING_KEYS.items()}
    assert SweepSettings.from_dict(mine) == SweepSettings()   # what a shape task carries comes back whole
    # every field those sweeps recorded; new since: the canary, the eager timing, the input salt (null: each
    # shape task drew its own), the source screen and the worker's sandbox (all recorded by new runs); the timing
    # fields are one TimingPolicy now
    assert set(mine) - set(recorded) == {"canary", "eager", "input_salt", "screened", "unprivileged", "timing"}
    assert set(recorded) - {"allow_tf32", "specs"} - set(TIMING_KEYS) <= set(mine)
    assert not set(TIMING_KEYS) & set(mine)


@pytest.mark.parametrize("name", ["2026-12-01_nvidia-h200_tune-r25.json.gz", "2026-12-01_nvidia-h200_tune-r4.json.gz"])
def test_the_tuner_records_the_stages_the_committed_tunes_recorded(name):
    recorded = _settings(name)
    assert tune_rules.SCREEN == recorded["screen"] == policy.TUNE_SCREEN.stage()
    assert tune_rules.FINAL == recorded["final"] == policy.TUNE_FINAL.stage()
    assert policy.TUNE_FINAL.min_clock_fraction == recorded["min_clock_fraction"]


def test_the_survey_records_the_timing_the_committed_surveys_recorded():
    """Every committed survey (its file named "<date>_<gpu>_screen-<label>", as the survey wrote it then) recorded
    the timing the survey records now."""
    surveys = sorted(RUNS.glob("*_screen-*.json*"))
    assert len(surveys) >= 30
    assert survey.TIMING == policy.SURVEY.stage()
    assert {p.name for p in surveys if _settings(p.name)["timing"] != survey.TIMING} == set()


def test_a_stage_round_trips_through_sweep_settings():
    """The tuner's worker settings take every stopping-rule number from the stage, nothing else changes."""
    from profiler.commands.tune_measure import timing_settings

    st = timing_settings(SweepSettings(seed=7), tune_rules.SCREEN)
    assert st.timing == policy.SWEEP.with_stage(tune_rules.SCREEN) and st.seed == 7
    assert (st.mode, st.check, st.probes) == ("cold", "quick", False)
    assert st.timing.stage() == tune_rules.SCREEN
