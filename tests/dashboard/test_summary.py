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
