"""The words the app and the reports use, defined once: the Glossary page shows them all, tables use the short
forms as column tooltips, and reports quote them.

Each entry: a title, a one-line `short` form (tooltips) and a `long` explanation (Markdown). The numbers quoted
come from committed run files named in the text. What depends on the workload (its families, weights and loads)
is not in the text: markdown(keys, workload) adds it for the workload shown (the default one when none is given).
"""
from __future__ import annotations

from dataclasses import dataclass

from dashboard.model import noise
from dashboard.model.workloads import count_word, default_workload


@dataclass(frozen=True)
class Term:
    key: str
    title: str
    short: str
    long: str


TERMS: dict[str, Term] = {t.key: t for t in [
    Term("provenance", "measured · derived · published · uploaded",
         "Where a number comes from.",
         "**measured**: timed on a device (the committed runs: an H200; a CPU or another GPU is named in its run) by "
         "`python -m profiler` and stored in a run file (`datasets/runs/`). "
         "**derived**: computed by projlab from measured or published times (ratios, scores, floors, SOL, CIs). "
         "**published**: taken from the write-up (the official 036 table, its probes, its ledger). "
         "**uploaded**: a table or run someone gave the app, shown as given."),
    Term("ratio", "ratio", "Baseline time ÷ candidate time; above 1 the candidate is faster.",
         "Per shape, *ratio of medians* = median baseline µs ÷ median candidate µs (what the score aggregates). "
         "*Paired ratio* = median of the per-round ratios (the profiler times baseline and candidate in "
         "alternating rounds); its 95% CI comes from those pairs. The two medians need not be equal, so a CI is "
         "always shown next to the paired ratio it belongs to."),
    Term("ci", "95% CI", "95% percentile-bootstrap interval of a ratio or score from the timing samples.",
         "Resampling the timing samples (paired by round where both series come from one run) 1,000 times gives "
         "the 95% interval. It covers sampling noise only: two back-to-back runs of identical kernels differ by "
         "more than one run's CI (where buffers land in memory changes between runs), which is why a verdict "
         "across runs reads it against the cross-run band (see ε)."),
    Term("sigma_w", "Σw", "Weighted sum over a load's shapes (one per family): Σ weight × time.",
         "Each load has one shape per family of the run's workload; its time is Σ w·t with the workload's family "
         "weight w (equal weights cancel in ratios). The load ratio is Σw·baseline ÷ Σw·candidate."),
    Term("score", "score", "Geometric mean of the load ratios.",
         "The benchmark score: the geometric mean of the per-load ratios of the run's workload. "
         "*Score-equivalent time* is the geometric mean over loads of Σw·t per side; *time saved* = 1 − 1/score."),
    Term("flags", "flags", "Notes on a timed result; a flag never changes a time, only what is scored.",
         "A result's `flags` (run files, the Shapes page, reports): **below_floor**: faster than the run's own HBM "
         "probe at its bytes by more than the probe's noise, an artifact of the measurement, so kept out of every "
         "score unless included; **throttled**: samples taken while the clock was throttled were dropped; "
         "**wide_ci**: the 95% CI is wider than the profiler's stopping rule wanted (the time limit came first); "
         "**less_accurate**: the candidate's error is more than the contract's factor × the baseline's, though "
         "within its tolerance (correct, but noted); **incorrect**: it failed the correctness contract and is never "
         "scored. 'Results with flags' counts results carrying at least one."),
    Term("floor", "floor", "The least time a shape could take: max(memory floor, compute floor).",
         "*Memory floor*: the time the run's HBM read probes took for the shape's bytes (weights + activations + "
         "output), interpolated on the probe curve. *Compute floor*: 2·M·N·K FLOPs ÷ the compute peak. The larger "
         "one applies and names the *bound* (memory or compute). For the published table the floors use the "
         "write-up's four probes and its quoted 989 TFLOP/s."),
    Term("sol", "SOL", "Speed of light: floor ÷ time (100% = at the floor).",
         "Per shape, SOL = floor ÷ measured time; per load, Σw·floor ÷ Σw·time. 100% means the kernel runs at "
         "the floor."),
    Term("sol_over", "SOL above 100%", "The kernel beat its floor: the floor is not a lower bound there.",
         "A floor is only as fast as the probe that measured it. SOL above 100% means the kernel read its bytes "
         "faster than the probe did at that size (e.g. the published 036 decode-1 times beat the write-up's "
         "probes), so read it as ‘at the floor’, not as more than the hardware can do. It is flagged, not "
         "clipped."),
    Term("above_floor", "time above the floor", "Time − floor: what a perfect kernel could still remove.",
         "Σw·(time − floor) per family and load: the part of the time that is above what the probes say the bytes "
         "need. It is an upper bound on what any kernel could recover there."),
    Term("verdicts", "FAST · SLOW · SAME · AMBIGUOUS · SAME ROUTE · NO SAMPLES · NO VERDICT",
         "Verdict from the 95% CI and the band ±ε that applies (named beside it).",
         "**FAST**: the whole CI is above 1 + ε. **SLOW**: the whole CI is below 1 − ε. **SAME**: the whole CI "
         "is inside [1 − ε, 1 + ε]. **AMBIGUOUS**: the CI crosses a band edge (the data cannot tell). "
         "**SAME ROUTE**: both sides ran the identical route (method and config, same GPU model), so the "
         "difference is drift, never a speedup. **NO SAMPLES**: a published table has no samples, so no CI and no "
         "verdict. **NO VERDICT**: no repeat evidence on the run's device (a band comes only from the same kind of "
         "device: its committed repeats, or the run's own repeat such as `baseline#2`)."),
    Term("eps", "ε (the band)", "How far two timings of the identical route read apart: differences inside it are "
         "‘the same’.",
         "One noise model (`datasets/noise_model.py`, derived by `dashboard/model/noise.py`) gives every verdict its band, derived from the committed runs (never "
         "typed): the within-run band for two candidates of one run, the cross-run band for two runs, and the "
         "relative cross-run band where both runs hold the baseline (each side relative to its own run's "
         "baseline). Pooled bands now: " + noise.headline() + ". Per shape and per load they are kept per family "
         "and M range where enough runs stand behind them (RESULTS.md, 'Noise bands')."),
    Term("baselines", "local vs official baselines", "Local runs and the published table have different baselines.",
         "The local baseline is torch `F.linear` on this machine; the official one is the write-up's SGLang path "
         "on the evaluator (e.g. router M=256: 46.4 µs here, 17.6 µs published). Ratios against different "
         "baselines are not comparable, so a score from a run and the official 1.3012 sit side by side, labelled."),
    Term("eager", "eager vs graph time", "Graph time: a CUDA-graph replay (what is scored); eager: one plain call, "
         "host cost included.",
         "Every score uses CUDA-graph replays: the kernels alone, as serving engines that replay graphs run them. "
         "A plain (eager) call also pays Python dispatch and the launch of each kernel on the host, so a plan of "
         "several small launches can win replayed and lose eagerly: timers that call eagerly, such as "
         "`triton.testing.do_bench`, measure that. A run may record `eager_us` per result, the time per call of "
         "eager calls in a loop (host-inclusive); it is shown beside the graph time, never scored. *Host cost* = "
         "eager − graph; a shape is flagged *host > kernel* where the host cost exceeds the graph time: deployed "
         "without graphs, the host, not the kernel, sets its time."),
    Term("clock", "SM clock and gpu_idle", "The clock while measuring, not the idle reading at the start.",
         "A run records the SM clock at start and end and samples it after the probes and after every shape. The "
         "start and end readings are taken on an idle GPU, whose clock drops and whose throttle reason reads "
         "`gpu_idle`: that is not throttling. What matters is the sampled clock while measuring; any other "
         "throttle reason (power, thermal) is reported."),
]}


def short(key: str) -> str:
    """One-line definition for a tooltip."""
    return TERMS[key].short


def workload_words(key: str, workload=None) -> str:
    """The sentence a term needs about the workload shown ('' for a term that needs none): its families and
    weights (Σw), its loads (score)."""
    wl = workload or default_workload()
    if key == "sigma_w":
        weights = {f: rec["weight"] for f, rec in wl.families.items()}
        same = len(set(weights.values())) == 1
        told = (f"weight {next(iter(weights.values())):g} for every family" if same else
                ", ".join(f"{f} {w:g}" for f, w in weights.items()))
        return (f"In {wl.name}: {count_word(len(weights))} families ({', '.join(wl.family_order)}), {told}.")
    if key == "score":
        loads = ", ".join(f"{name} (M={m})" for name, m in wl.load_m.items())
        return f"In {wl.name}: {count_word(len(wl.load_order))} loads, {loads}."
    return ""


def long(key: str, workload=None) -> str:
    """A term's explanation, with what it says about the workload shown (workload_words)."""
    extra = workload_words(key, workload)
    return f"{TERMS[key].long} {extra}" if extra else TERMS[key].long


def markdown(keys: list[str] | None = None, workload=None) -> str:
    """The glossary (or the named entries) as Markdown, one section per term, for `workload` (default: the
    default workload)."""
    entries = [TERMS[k] for k in keys] if keys else list(TERMS.values())
    return "\n\n".join(f"**{t.title}** — {long(t.key, workload)}" for t in entries)
