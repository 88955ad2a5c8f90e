"""How figures and tables look on a page: markdown-escaped text, figure tables, gated rows in red, column labels
that say measured / derived / published, CSV downloads."""
from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from dashboard.documents.report_render import md_escape
from datasets.text import escape_controls

RED = "color: #d62728; font-weight: 600"


# `text` shown as it is inside markdown, on one line: every name or other text from outside that a page puts into
# markdown, a caption, an alert, a heading, a widget label or a tooltip goes through it (the reports' own escape,
# dashboard.documents.report_render.md_escape: no link, image, HTML, math or directive can come from it).
md_text = md_escape


def md_code(text) -> str:
    """`text` as inline code on one line (a command to copy): its fence is longer than any backtick run inside it,
    so nothing in it can close the span early; inside a code span nothing is markup."""
    flat = escape_controls(re.sub(r"[\r\n\u2028\u2029]+", " ", str(text)))
    fence = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def figure_table(figures: dict[str, str], strong: tuple[str, ...] = ()) -> str:
    """Figures as one markdown table, each label above its value (the values of the labels in `strong` in bold)."""
    values = [f"**{md_text(v)}**" if k in strong else md_text(v) for k, v in figures.items()]
    return "\n".join(["| " + " | ".join(map(md_text, figures)) + " |", "|" + " --- |" * len(figures),
                      "| " + " | ".join(values) + " |"])


def show_figures(figures: dict[str, str], note: str | None = None, help: str | None = None,
                 strong: tuple[str, ...] = (), box=st) -> None:
    """A group of figures as one element: figure_table, then `note` (markdown) in caption type with the `help`
    tooltip. What a row of st.metric showed, for a fresh browser's first page: one markdown block instead of a
    metric element per figure and a column block around each, and no metric code to fetch."""
    body = figure_table(figures, strong)
    if note:   # Streamlit draws a markdown element's help icon after its last paragraph, so a table needs one
        body += f"\n\n:small[:gray[{note}]]"
    box.markdown(body, help=help if note else None)


def gated_style(df: pd.DataFrame, column: str = "usable"):
    """The table with the rows the gate keeps out (incorrect, failed, below the floor) in red."""
    if column not in df or df[column].all():
        return df
    bad = ~df[column].astype(bool)
    return df.style.apply(lambda row: [RED if bad[row.name] else ""] * len(row), axis=1)


def ratio_ci_columns(point: str = "ratio", label: str = "ratio × (derived)") -> dict:
    """Column labels for a ratio (or score) and the 95% bootstrap CI dashboard.model.compare computed around it."""
    num = st.column_config.NumberColumn
    return {point: num(label, format="%.4f"), "ci_low": num("95% CI low", format="%.4f"),
            "ci_high": num("95% CI high", format="%.4f")}


def shape_ratio_columns(selection) -> dict:
    """Column labels for a view's (ui.view.View) dashboard.model.views.wide_shapes times and ratios: the per-shape CI in a
    run file belongs to the median of the paired per-round ratios (ratio_paired), not to the ratio of the two
    medians (ratio)."""
    t = "measured" if selection.kind == "run" else "published" if selection.source == "published" else "uploaded"
    num = st.column_config.NumberColumn
    return {"baseline_us": num(f"{selection.baseline} µs ({t})", format="%.3f"),
            "candidate_us": num(f"{selection.candidate} µs ({t})", format="%.3f"),
            "ratio": num("ratio of medians × (derived)", format="%.4f"),
            "ratio_paired": num("median paired ratio × (measured pairs)", format="%.4f"),
            "ratio_ci_low": num("paired ratio CI low", format="%.4f"),
            "ratio_ci_high": num("paired ratio CI high", format="%.4f"),
            "status_baseline": st.column_config.TextColumn(f"{selection.baseline} status"),
            "status_candidate": st.column_config.TextColumn(f"{selection.candidate} status"),
            "usable": st.column_config.CheckboxColumn("scored", help="both sides correct and timed (and not below "
                                                                     "the measured floor unless included)")}


def download_csv(df: pd.DataFrame, name: str, label: str = "Download CSV") -> None:
    st.download_button(label, df.to_csv(index=False).encode(), file_name=name, mime="text/csv", key=f"dl-{name}")


PAGE_TABLE_PX = 1080   # what a table may take at the browser test's 1,600 px window (tests/browser): sidebar and margins


def fit_widths(widths: dict[str, int], total: int = PAGE_TABLE_PX) -> dict[str, int]:
    """Column widths scaled down together so the table fits `total` px (never up): a wider table scrolls sideways."""
    have = sum(widths.values())
    if have <= total:
        return dict(widths)
    return {c: max(40, int(w * total / have)) for c, w in widths.items()}
