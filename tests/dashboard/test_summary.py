"""dashboard.cli.summary.format_shape_table: long method labels wrap between words inside their column, never cut."""
import pandas as pd

from dashboard.cli import summary

LONG = "splitk_fused BM=16 BN=64 BK=128 SPLIT=4 num_warps=4 num_stages=3 cache=.cg"


def _wide():
    return pd.DataFrame({"shape": ["decode 1/o", "decode 1/router"], "M": [1, 1], "baseline_us": [6.2, 10.5],
                         "candidate_us": [5.3, 3.4], "ratio": [1.17, 3.09], "ratio_paired": [1.16, float("nan")],
                         "ratio_ci_low": [1.15, float("nan")], "ratio_ci_high": [1.17, float("nan")],
                         "floor_us": [5.1, 3.2], "bound": ["memory", "memory"]})


def test_long_methods_wrap_at_spaces_and_keep_every_word():
    sol = pd.DataFrame({"load": ["decode 1"], "sol_baseline": [0.6], "sol_candidate": [0.9]})
    text = summary.format_shape_table(_wide(), {"decode 1/o": LONG, "decode 1/router": "gemv"}, sol, "t")
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.lstrip().startswith("decode 1/o"))
    start = lines[1].index("method")
    cells = [lines[row][start:start + summary.METHOD_COLUMN]]
    j = row + 1
    while not lines[j].lstrip().startswith("decode 1/router"):  # continuation lines hold only the method
        assert lines[j][:start].strip() == ""
        cells.append(lines[j][start:])
        j += 1
    assert len(cells) >= 2
    assert " ".join(c.strip() for c in cells) == LONG  # every word whole, in order
    assert all(len(c.rstrip()) < summary.METHOD_COLUMN for c in cells)
    assert lines[row][start + summary.METHOD_COLUMN:].split()[:2] == ["6.20", "5.30"]  # the numbers stay aligned


def test_short_methods_take_one_line():
    sol = pd.DataFrame({"load": [], "sol_baseline": [], "sol_candidate": []})
    text = summary.format_shape_table(_wide(), {"decode 1/o": "gemv", "decode 1/router": "mm"}, sol, "t")
    assert len(text.splitlines()) == 3 + 2 + 1  # title, header, note; two rows; the SOL heading


def test_a_row_the_gate_keeps_out_keeps_every_column_aligned():
    """A status (DISTURBED, FAILED, BELOW FLOOR, ...) in place of the ratios spans the ratio and paired columns
    exactly: its floor and SOL cells end where the header's do, as a scored row's."""
    statuses = [s for s in summary.STATUS_WORDS if s != "missing"]
    n = 1 + len(statuses)
    wide = pd.DataFrame({"shape": [f"s{i}/o" for i in range(n)], "M": [1] * n, "baseline_us": [6.2] * n,
                         "candidate_us": [5.3] * n, "ratio": [1.17] * n, "ratio_paired": [1.16] * n,
                         "ratio_ci_low": [1.15] * n, "ratio_ci_high": [1.17] * n, "floor_us": [5.1] * n,
                         "bound": ["memory"] * n, "usable": [True] + [False] * (n - 1),
                         "status_candidate": ["ok"] + statuses, "status_baseline": ["ok"] * n})
    sol = pd.DataFrame({"load": [], "sol_baseline": [], "sol_candidate": []})
    lines = summary.format_shape_table(wide, {}, sol, "t").splitlines()
    header = lines[1]
    rows = [line for line in lines[3:] if line.lstrip().startswith("s")]
    assert len(rows) == n
    for column in ("floor µs", "SOL"):
        end = header.index(column) + len(column)
        ends = [row[end - 1] != " " and row[end:end + 1] in ("", " ") for row in rows]
        assert all(ends) and len({row[:end].split()[-1] for row in rows}) == 1, "\n".join([header, *rows])
    for row, status in zip(rows[1:], statuses):
        assert f"{summary.STATUS_WORDS[status]} (candidate)" in row
