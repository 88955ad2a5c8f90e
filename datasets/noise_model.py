"""The noise model in use: the band lookup and the verdict rule every decision calls -- the Compare page, reports,
`python -m dashboard compare`, the tuner's "is it a win" (profiler.commands.tune_rules), the canary's band
(profiler.commands.canary) and the wide-interval flag (profiler.measure.stats). The bands are derived from the
committed runs by dashboard.model.noise (`derive`, its docstring says how) into BANDS_FILE, which is data; this module
only reads it, so every layer from kernels up can ask it.

    band(kind, level, device, key=None, own=None) -> Band   the band for a comparison on `device` (a driver-reported
                                        name): the committed evidence of that kind of device, else the evidence
                                        `own` of the run itself (e.g. its `baseline` vs `baseline#2`), else a Band
                                        with no fraction whose text says "no verdict: no repeat evidence on <device>"
                                        and how to make some. Never another device's band.
    verdict(ci_low, ci_high, band) -> FAST | SLOW | SAME | AMBIGUOUS | NO SAMPLES | NO VERDICT
    band_from_deviations(devs, level) -> fraction   the derivation's rule on a list of identical-route deviations
    band_from_repeats(devs, level) -> fraction      a bound from a FEW repeats (the canary's own): the level's
                                        quantile of the deviations' spread, at the spread's 95 % upper confidence
                                        bound, so fewer repeats give a wider band, never a narrower one
    within(a, b, band) -> bool          a is no more than the band slower than b

Verdicts, in nvbench's style, for a ratio interval [lo, hi] and a band ±b: FAST when lo > 1 + b, SLOW when
hi < 1 − b, SAME when the interval lies inside [1 − b, 1 + b], AMBIGUOUS otherwise; NO SAMPLES without an interval;
NO VERDICT without a band (no repeat evidence on the device).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from statistics import NormalDist
from functools import lru_cache
from pathlib import Path

from datasets import devices

WITHIN, ACROSS, ACROSS_RR = "within", "across", "across_rr"
KINDS = (WITHIN, ACROSS, ACROSS_RR)
SHAPE, LOAD, OVERALL = "shape", "load", "overall"
LEVELS = (SHAPE, LOAD, OVERALL)
QUANTILE = {SHAPE: 0.99, LOAD: 1.0, OVERALL: 1.0}
MIN_RUNS = 4            # run files behind a keyed band; fewer, and the level's pooled band applies
MIN_PAIRS = 4           # identical-route pairs a run's own evidence needs before it bounds a band
ROUND_TO = 0.001        # bands are shown as percentages with one decimal
M_RANGES = ((1, 1), (2, 32), (33, 256), (257, None))
POOLED = "pooled"
ANY_GPU = "*"           # bands pooled over every device with evidence (kept in the file; never used for a verdict)
BANDS_FILE = Path(__file__).resolve().parents[1] / "dashboard" / "model" / "noise_bands.json"
COMMAND = "python3 -m dashboard noise --out dashboard/model/noise_bands.json"
OWN = "this run's own repeat"

FAST, SLOW, SAME, AMBIGUOUS, NO_SAMPLES, SAME_ROUTE = "FAST", "SLOW", "SAME", "AMBIGUOUS", "NO SAMPLES", "SAME ROUTE"
NO_VERDICT = "NO VERDICT"
JUDGED = (FAST, SLOW, SAME, AMBIGUOUS)

KIND_WORDS = {WITHIN: "within-run band", ACROSS: "cross-run band",
              ACROSS_RR: "cross-run band (each side relative to its run's baseline)"}
MODE_WORDS = {WITHIN: "paired within one run (candidates timed in alternating rounds)",
              ACROSS: "across runs, raw times (not both runs hold the baseline on the same routes)",
              ACROSS_RR: "across runs, each side relative to its own run's baseline (ratio of ratios)"}


class NoiseError(ValueError):
    """The bands file is missing or malformed (one line naming it)."""


def how_to_make_evidence(device: str) -> str:
    """What gives a device repeat evidence: a run that times one plan twice, or repeated sweeps, committed."""
    flag = " --device cpu" if devices.lookup(device).is_cpu else ""
    return (f"time one plan twice in one run (python -m profiler run{flag} --plan baseline --plan baseline) or "
            f"commit repeated sweeps of this device and regenerate the bands ({COMMAND})")


@dataclass(frozen=True)
class Band:
    """A ±frac band with where it comes from: kind, level, the key it was kept for, and its evidence. frac None: no
    evidence on `gpu`, so no verdict."""

    frac: float | None
    kind: str
    level: str
    key: str = POOLED
    n_runs: int = 0
    n_pairs: int = 0
    gpu: str = ""
    given: bool = False     # a caller's fixed band, not the model's
    source: str = ""        # "" the committed runs; OWN: the run's own repeat

    @property
    def known(self) -> bool:
        return self.frac is not None

    def text(self) -> str:
        """'cross-run band ±3.1 %, from 42 repeated sweeps (router M 2–32); measured on NVIDIA H200': printed next to
        every verdict; without evidence: 'no verdict: no repeat evidence on <device>; make some: ...'."""
        if self.given:
            return f"band ±{self.frac:.1%} (given, not derived from repeat evidence)".replace("%", " %")
        if self.frac is None:
            return (f"no verdict: no repeat evidence on {self.gpu or 'this device'}; make some: "
                    f"{how_to_make_evidence(self.gpu)}")
        where = "" if self.key == POOLED else f" ({self.key})"
        gpu = f"; measured on {self.gpu}" if self.gpu else ""
        if self.source == OWN:
            evidence = f"{OWN} ({self.n_pairs} identical-route pairs)"
        else:
            evidence = (f"{self.n_runs} run files timing one route twice" if self.kind == WITHIN else
                        f"{self.n_runs} repeated sweeps")
        return f"{KIND_WORDS[self.kind]} ±{self.frac:.1%}, from {evidence}{where}{gpu}".replace("%", " %")


def band_words(frac: float | None) -> str:
    """A band as a reader takes it in: '±4.7 %' up to ±100 %, else 'a factor of 12' (a timing that can read 12x
    another of the same call, no slowdown below that is seen); 'no band' without one."""
    if frac is None or not _finite(frac):
        return "no band"
    return f"±{frac:.1%}".replace("%", " %") if frac <= 1 else f"a factor of {1 + frac:.3g}"


def fixed(frac: float) -> Band:
    """A band the caller chose (tests, an explicit override): labelled as given."""
    return Band(float(frac), WITHIN, POOLED, given=True)


def _frac(band) -> float | None:
    """The band's fraction; None for no band (a Band without one, None, or NaN: a table's missing band)."""
    frac = band.frac if isinstance(band, Band) else band
    return float(frac) if _finite(frac) else None


def verdict(ci_low: float, ci_high: float, band) -> str:
    """FAST / SLOW / SAME / AMBIGUOUS from a ratio interval and a band (a Band or a fraction); NO SAMPLES without
    an interval; NO VERDICT without a band."""
    if not (_finite(ci_low) and _finite(ci_high)):
        return NO_SAMPLES
    b = _frac(band)
    if b is None:
        return NO_VERDICT
    if ci_low > 1 + b:
        return FAST
    if ci_high < 1 - b:
        return SLOW
    if ci_low >= 1 - b and ci_high <= 1 + b:
        return SAME
    return AMBIGUOUS


def within(a: float, b: float, band) -> bool:
    """a is at most the band slower than b (a time, b a time); no band: only when a <= b."""
    frac = _frac(band)
    return a <= b * (1 + (frac or 0.0))


def _finite(x) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def m_range(M: int) -> str:
    for lo, hi in M_RANGES:
        if M >= lo and (hi is None or M <= hi):
            return f"M {lo}" if lo == hi else f"M {lo}–{hi}" if hi else f"M ≥ {lo}"
    return f"M {M}"


def shape_key(family: str, M: int) -> str:
    return f"{family} {m_range(int(M))}"


def ceil_band(x: float) -> float:
    """A deviation rounded up to the bands' resolution (ROUND_TO)."""
    return round(math.ceil(round(x / ROUND_TO, 6)) * ROUND_TO, 4)


def band_from_deviations(devs, level: str) -> float | None:
    """The derivation's rule (dashboard.model.noise.derive) on identical-route deviations max(a, b) ÷ min(a, b) − 1: the
    level's QUANTILE, rounded up; None for fewer than MIN_PAIRS deviations (too few to bound a band)."""
    vals = sorted(float(d) for d in devs if _finite(d))
    if len(vals) < MIN_PAIRS:
        return None
    q = QUANTILE[level] * (len(vals) - 1)
    lo, hi = math.floor(q), math.ceil(q)
    value = vals[lo] + (vals[hi] - vals[lo]) * (q - lo)   # pandas' linear quantile, without pandas
    return ceil_band(value)


CONFIDENCE = 0.95       # the confidence of every interval in projlab (the bootstrap CIs) and of a repeat's bound


def _chi2_lower(dof: int, p: float) -> float:
    """The p-quantile of a chi-square with `dof` degrees of freedom (Wilson-Hilferty; numpy/scipy-free)."""
    z = NormalDist().inv_cdf(p)
    return max(1e-9, dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3)


def band_from_repeats(devs, level: str) -> float | None:
    """A band from a few identical-route deviations d = max(a, b) / min(a, b) - 1 (two clean timings of one shape):
    ln(1 + d) taken as |N(0, s^2)|, s bounded above at CONFIDENCE from the n deviations (chi-square), and the
    level's QUANTILE of |N(0, s_upper^2)| as the band. None for fewer than MIN_PAIRS deviations. The derivation's
    rule (band_from_deviations: the largest of thousands) would take the largest of a handful here and call that
    the tail."""
    logs = [math.log1p(float(d)) for d in devs if _finite(d) and float(d) >= 0]
    if len(logs) < MIN_PAIRS:
        return None
    n = len(logs)
    s_upper = math.sqrt(sum(x * x for x in logs) / _chi2_lower(n, 1 - CONFIDENCE))
    z = NormalDist().inv_cdf(0.5 + QUANTILE[level] / 2)
    return ceil_band(math.expm1(z * s_upper))


# ---- the bands in use ----------------------------------------------------------------------------------------

@lru_cache(maxsize=4)
def _content(path: str) -> dict:
    try:
        content = json.loads(Path(path).read_text())
        if not isinstance(content.get("bands"), dict) or not isinstance(content.get("files"), list):
            raise ValueError("no 'bands' object or 'files' list")
        return content
    except (OSError, ValueError, AttributeError) as exc:
        raise NoiseError(f"{Path(path).name}: cannot read the noise bands ({exc}); regenerate: {COMMAND}") from exc


def _read(path) -> dict:
    return _content(str(path))["bands"]


def evidence_device(bands: dict, gpu: str | None) -> str | None:
    """The name the bands file keeps `gpu`'s evidence under: the same table entry (devices.lookup), else None."""
    if not gpu:
        return None
    if gpu in bands and gpu != ANY_GPU:
        return gpu
    want = devices.lookup(gpu)
    for name in sorted(bands):
        if name != ANY_GPU and devices.lookup(name).key == want.key and want.in_table:
            return name
    return None


def _entries(levels: dict, kind: str, level: str) -> tuple[str, dict | None]:
    entries = ((levels.get(kind) or {}).get(level)) or None
    if entries:
        return kind, entries
    # no evidence of this kind at this level on the device (e.g. no repeat run): the cross-run band stands in
    for alt in (ACROSS, WITHIN):
        entries = ((levels.get(alt) or {}).get(level)) or None
        if entries:
            return alt, entries
    return kind, None


def band(kind: str, level: str, gpu: str | None = None, key: str | None = None, path=BANDS_FILE,
         own: dict | None = None) -> Band:
    """The band for a comparison of `kind` at `level` on `gpu` (a driver-reported device name), kept for `key`
    (shape: shape_key(family, M); load: m_range(M)) where the evidence supports it. The device's committed evidence
    first, then `own` (dashboard.model.noise.derive's {kind: {level: {key: entry}}} of the run itself); neither: a Band
    without a fraction (no verdict). gpu None (the compared series name no device, e.g. a published table): the
    bands pooled over every device with evidence, said so in its text."""
    bands = _read(path)
    name = evidence_device(bands, gpu)
    source = ""
    if name is not None:
        levels = bands[name]
    elif gpu is None:
        levels, name = bands.get(ANY_GPU) or {}, ", ".join(g for g in sorted(bands) if g != ANY_GPU)
    elif own:
        levels, name, source = own, gpu, OWN
    else:
        return Band(None, kind, level, POOLED, gpu=gpu)
    kind_used, entries = _entries(levels, kind, level)
    if not entries:
        if source == OWN or gpu is not None:
            return Band(None, kind, level, POOLED, gpu=gpu or "")
        raise NoiseError(f"{Path(path).name}: no {level} band for {kind}; regenerate: {COMMAND}")
    use = key if key in entries else POOLED
    e = entries.get(use) or next(iter(entries.values()))
    return Band(float(e["band"]), kind_used, level, use, int(e.get("runs", 1)), int(e["pairs"]), name, source=source)


def has_evidence(gpu: str | None, path=BANDS_FILE) -> bool:
    """Whether the committed bands hold repeat evidence for `gpu`'s kind of device."""
    return evidence_device(_read(path), gpu) is not None


def files(path=BANDS_FILE) -> list[str]:
    """Every run file behind the bands."""
    return list(_content(str(path))["files"])


def devices_with_evidence(path=BANDS_FILE) -> list[str]:
    return [g for g in sorted(_read(path)) if g != ANY_GPU]


def summary_rows(gpu: str | None = None, path=BANDS_FILE) -> list[Band]:
    """Every pooled band and every keyed one, per device with evidence: what RESULTS.md lists."""
    bands = _read(path)
    gpus = [gpu] if gpu else devices_with_evidence(path)
    rows = []
    for g in gpus:
        for kind in KINDS:
            for level in LEVELS:
                for key in (bands[g].get(kind) or {}).get(level) or {}:
                    rows.append(band(kind, level, g, key, path))
    return rows


def headline(path=BANDS_FILE) -> str:
    """One sentence with the pooled bands per kind and level of one device, for the glossary and the pages: the
    write-up's device (the committed runs' and the official table's) where it has evidence, else the first that
    has."""
    gpus = devices_with_evidence(path)
    home = devices.lookup(devices.WRITEUP_DEVICE).key
    gpu = next((g for g in gpus if devices.lookup(g).key == home), gpus[0] if gpus else None)
    parts = []
    for kind in KINDS:
        vals = []
        for level in LEVELS:
            try:
                b = band(kind, level, gpu, None, path)
            except NoiseError:
                continue
            if b.known:
                vals.append(f"±{b.frac:.1%} per {level}".replace("%", " %").replace("per overall", "overall"))
        if vals:
            b0 = band(kind, LOAD, gpu, None, path)
            parts.append(f"{KIND_WORDS[kind]} {', '.join(vals)} (from {b0.n_runs} run files)")
    return "; ".join(parts) + (f", measured on {gpu}" if gpu else "")
