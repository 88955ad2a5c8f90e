"""The Compare page's data: the series each chosen source offers, their short names, which sources share a workload
(the page never pairs shapes of two workloads), the series it opens on, and each run's own score where series cannot
be paired. Ratios, intervals, bands and verdicts are dashboard.model.compare's, through ui.loaders' caches."""
from __future__ import annotations

from dashboard.model import noise, runs, scoring, sources, views, workloads
from dashboard.model.compare import GATED, VERDICTS
from dashboard.model.views import shape_order
from dashboard.model.workloads import mismatch
from ui import loaders

__all__ = ["GATED", "VERDICTS", "shape_order", "mismatch", "band_headline", "workload_of", "same_workload",
           "opening_sources", "offered_series", "short_names", "default_series", "named_workloads", "series_specs",
           "own_scores", "with_verdicts", "marked_usable"]

band_headline = noise.headline

# A series: its key "<source label> · <name>" -> (kind "run" or "table", the source, the candidate or table column,
# the name shown).


def workload_of(src):
    """The source's workload, or None where it does not load (the page shows its error where it reads the source)."""
    try:
        return loaders.series_workload("table" if src.kind == "table" else "run", src.path)
    except loaders.BAD_INPUT:
        return None


def same_workload(src, other) -> bool:
    """Both sources load and measured the same workload (name and fingerprint)."""
    a, b = workload_of(src), workload_of(other)
    return a is not None and b is not None and workloads.same_workload(a, b)


def opening_sources(srcs: list, current, asked: list[str]) -> list[str]:
    """The sources the page opens on: those a link's series name (`asked`), else the sidebar's source (`current`)
    and, when it measured the same workload, the run the other pages open on."""
    linked = [s.name for s in srcs if any(q.startswith(f"{s.label} · ") for q in asked)]
    if linked:
        return linked
    first = loaders.default_run_path()
    first_src = next((s for s in srcs if first is not None and s.name == first.name), None)
    joins = first_src is not None and same_workload(current, first_src)
    return list(dict.fromkeys([current.name, *([first_src.name] if joins else [])]))


def offered_series(src) -> tuple[dict[str, tuple], list[str]]:
    """The series a source offers (key -> series) and its default pair's keys, baseline first: a table's two
    columns, a run's candidates. Raises one of ui.loaders.BAD_INPUT where the source does not load."""
    if src.kind == "table":
        loaders.official(src.path)
        cols = (("baseline_us", "baseline"), ("candidate_us", sources.table_candidate(src)))
        offered = {f"{src.label} · {name}": ("table", src, col, name) for col, name in cols}
        pair = [name for _, name in cols]
    else:
        data = loaders.run_data(src.path)
        offered = {f"{src.label} · {cand}": ("run", src, cand, cand) for cand in data.candidates()}
        pair = list(dict.fromkeys(sources.default_pair(data) or ()))
    return offered, [f"{src.label} · {name}" for name in pair]


def short_names(options: dict[str, tuple]) -> dict[str, str]:
    """Each series' short name (run date · run label · candidate, views.series_label), its source's label added
    where two would read the same."""
    short: dict[str, str] = {}
    for key, (_, src, _, name) in options.items():
        label = views.series_label(src.label, src.path, name)
        short[key] = label if label not in short.values() else f"{label} ({src.label})"
    return short


def default_series(pairs: list[list[str]], pair_sources: list) -> list[str]:
    """The first source's default pair (its baseline against its last candidate), then the candidate of each other
    source of the same workload."""
    if not pairs:
        return []
    rest = [p[-1] for p, s in zip(pairs[1:], pair_sources[1:]) if same_workload(pair_sources[0], s)]
    return list(dict.fromkeys([*pairs[0], *rest]))


def named_workloads(chosen: list[str], options: dict[str, tuple], short: dict[str, str]) -> list[tuple[str, object]]:
    """(short name, workload) of each chosen series, for workloads.mismatch."""
    return [(short.get(k, k), loaders.series_workload(options[k][0], options[k][1].path)) for k in chosen]


def series_specs(chosen: list[str], options: dict[str, tuple]) -> tuple:
    """(key, kind, path, column or candidate) per chosen series: what ui.loaders.series_frame and compared take."""
    return tuple((key, options[key][0], str(options[key][1].path), options[key][2]) for key in chosen)


def own_scores(chosen: list[str], options: dict[str, tuple]) -> list[dict]:
    """Each chosen run's own score (its default pair, in its own workload), and the published table's where one is
    chosen: what the page shows when the series cannot be paired. A run that cannot be scored says why."""
    rows = []
    for path in dict.fromkeys(str(options[k][1].path) for k in chosen if options[k][0] == "run"):
        data = loaders.run_data(path)
        pair = sources.default_pair(data)
        row = {"run": data.path.name, "workload": data.workload.name}
        try:
            breakdown = runs.run_score(data, *pair)
            row |= {"pair": f"{pair[1]} vs {pair[0]}", "score": breakdown.score,
                    "note": "; ".join(filter(None, (breakdown.accuracy, breakdown.screen)))}
        except (scoring.ScoringError, TypeError) as exc:
            row |= {"pair": f"{pair[1]} vs {pair[0]}" if pair else "—", "score": None, "note": str(exc)}
        rows.append(row)
    if any(options[k][0] == "table" for k in chosen):
        ref = loaders.official_score()
        rows.append({"run": "official_036.csv (published)", "workload": loaders.workload().name,
                     "pair": "036 vs baseline", "score": ref.score, "note": ""})
    return rows


def with_verdicts(shapes, verdicts: list[str]):
    """The per-shape rows whose verdict is one of `verdicts`."""
    return shapes[shapes["verdict"].isin(verdicts)]


def marked_usable(shapes):
    """The rows with a `usable` column: False where the gate gave no verdict (compare.GATED), for
    ui.widgets.gated_style."""
    return shapes.assign(usable=~shapes["verdict"].isin(GATED.values()))
