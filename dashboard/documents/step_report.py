"""The report section of a step run (`python -m dashboard report STEP_RUN.json`): Amdahl predicted vs measured, in-step
vs isolated per family, and the step's parts per candidate, as tables and figures beside the run's shape report."""
from __future__ import annotations

from dashboard.documents import report_render as render
from dashboard.model import step
from dashboard.plots import step_figures


def add_step_section(data, tables: dict, display: dict, figs: list, notes: list) -> None:
    """Append the step view of `data` (a step run) to a report's tables, display tables, figures and notes: both
    timings' tables, and the figures of the cold timing at each point."""
    fams = step.families(data)
    for mode in step.MODES:
        amd = step.amdahl_table(data, mode)
        fam = step.family_table(data, mode)
        tables[f"step amdahl {mode}"] = amd
        tables[f"step families {mode}"] = fam
        display[f"Decode step, {mode}: Amdahl predicted (derived) vs measured"] = step.display_amdahl(amd)
        display[f"Decode step, {mode}: in the step vs alone, per family"] = step.display_families(fam)
    amd, breakdown = step.amdahl_table(data, "cold"), step.breakdown_table(data, "cold")
    for b, c in step.points(data):
        where = f"{data.path.name}, batch {b}, context {c}, cold"
        parts = step.at_point(breakdown, b, c)
        if len(parts):
            figs.append(step_figures.step_bars(parts, fams, f"measured parts, unattributed rest derived — {where}"))
        row = step.at_point(amd, b, c)
        if len(row):
            figs.append(step_figures.amdahl_curve(row, f"curve derived; points measured and predicted — {where}"))
    lines = step.failures(data)
    notes.append(render.Note("Decode step", "p is the baseline's projection time inside its step (the breakdown) ÷ "
                             "its step time; predicted = 1/((1−p)+p/s) from the run's isolated per-shape medians; "
                             "measured is the step's paired ratio with its 95 % interval (dashboard/model/step.py)."
                             + (" Failures: " + "; ".join(lines) if lines else "")))
