"""The committed data files load, match the write-up, and bad files fail naming file, row and field."""
import math

import pytest

from datasets import (DatasetError, load_ledger, load_official, load_seed_probes, load_workload)
from datasets.paths import OFFICIAL_036_CSV, SEED_LEDGER_CSV, SEED_PROBES_CSV

LOADS = ["decode 1", "decode 16", "decode 32", "verify 1", "verify 16", "verify 32"]
FAMILIES = {"qkv_gate": (2304, 8192), "o": (8192, 1024), "pooler": (4096, 8192), "unpooler": (8192, 4096),
            "router": (256, 8192)}


def test_workload_has_the_30_spec_shapes():
    w = load_workload()
    assert w.load_order == LOADS
    assert w.family_order == list(FAMILIES)
    assert len(w.shapes) == 30
    assert list(w.shapes.columns) == ["load", "family", "M", "N", "K", "x_dtype", "w_dtype", "y_dtype", "weight",
                                      "rel_l2_tol"]
    m_by_load = dict(zip(LOADS, [1, 16, 32, 8, 128, 256]))
    for r in w.shapes.itertuples():
        assert r.M == m_by_load[r.load]
        n, k = FAMILIES[r.family]
        if r.family == "unpooler" and r.M in (1, 8):
            n = 1024  # the task's smaller output slice at the small-token loads
        assert (r.N, r.K) == (n, k)
        assert r.weight == 62
    assert not w.shapes.duplicated(["load", "family"]).any()


def test_router_dtypes_and_tolerances():
    w = load_workload()
    router = w.shapes[w.shapes.family == "router"].iloc[0]
    assert (router.x_dtype, router.w_dtype, router.y_dtype) == ("bfloat16", "float32", "float32")
    assert router.rel_l2_tol == 1e-4  # seed: 0.01% for the router, 1% for the BF16 families
    assert set(w.shapes[w.shapes.family != "router"].rel_l2_tol) == {0.01}
    assert w.contract["row_bound_factor"] == 5
    assert w.contract["sparse_probe_rel_tol"] == 1e-3


def test_nearby_shapes_are_never_scored_and_use_the_general_n():
    w = load_workload()
    assert set(w.nearby.load) == {"nearby"}
    assert len(w.nearby) == 5 * 11
    assert sorted(set(w.nearby.M)) == [2, 3, 7, 9, 15, 17, 31, 33, 100, 129, 255]
    assert set(w.nearby[w.nearby.family == "unpooler"].N) == {8192}
    assert w.shape_key("nearby", "o", 9) == "nearby/o/M9"
    assert w.shape_key("decode 1", "o", 1) == "decode 1/o"


def test_official_table_loads_with_exact_columns():
    df = load_official()
    assert list(df.columns) == ["load", "family", "M", "N", "K", "baseline_us", "candidate_us"]
    assert len(df) == 30
    row = df[(df.load == "verify 32") & (df.family == "router")].iloc[0]
    assert (row.baseline_us, row.candidate_us) == (17.568, 8.884)  # seed table's last row


def test_ledger_has_the_write_up_scores():
    ledger = load_ledger()
    assert ledger.candidate.map(type).eq(str).all()  # '001' keeps its leading zeros
    scores = {(r.candidate, r.kind): r.score for r in ledger.itertuples()}
    assert scores[("001", "check")] == 0.7761
    assert scores[("036", "check")] == 1.3020
    assert scores[("036", "scored")] == 1.301203
    assert scores[("039", "check")] == 1.3218
    assert scores[("039", "scored")] == 1.323430
    row039 = ledger[(ledger.candidate == "039") & (ledger.kind == "scored")].iloc[0]
    assert (row039.ci_low, row039.ci_high) == (1.3036, 1.3433)
    assert math.isnan(scores[("017", "check")])  # failed before timing: no score given
    assert set(ledger.track) >= {"projections", "attention", "layer"}


def test_seed_probes():
    probes = load_seed_probes()
    assert list(zip(probes.bytes, probes.us)) == [(8388608, 3.84), (16777216, 5.79), (37748736, 10.43),
                                                  (67108864, 16.65)]


def test_loaders_work_from_any_working_directory(tmp_path):
    """The data paths are anchored at the package, not the caller's directory: load everything from elsewhere."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import datasets as d; "
            "print(len(d.load_workload().shapes), len(d.load_official()), len(d.load_seed_probes()), "
            "len(d.load_ledger()) > 0, d.RUNS_DIR.is_dir())")
    out = subprocess.run([sys.executable, "-c", code, str(root)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["30", "30", "4", "True", "True"]


# --- bad files --------------------------------------------------------------------------------------------
def _official_lines():
    return OFFICIAL_036_CSV.read_text().splitlines()


def _write(tmp_path, lines, name="bad.csv"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _error(loader, path):
    with pytest.raises(DatasetError) as info:
        loader(path)
    assert isinstance(info.value, ValueError)
    return str(info.value)


def test_missing_column(tmp_path):
    lines = [",".join(cell for cell in line.split(",")[:-1]) for line in _official_lines()]  # drop candidate_us
    msg = _error(load_official, _write(tmp_path, lines))
    assert "bad.csv" in msg and "row 1" in msg and "'candidate_us'" in msg and "missing" in msg


def test_duplicated_header_column_is_named(tmp_path):
    lines = _official_lines()
    lines[0] = lines[0].replace("baseline_us", "M")  # 'M' twice; DictReader would keep only the last one
    message = _error(load_official, _write(tmp_path, lines))
    assert message == "bad.csv: row 1, field 'M': column 'M' appears twice in the header (columns 3 and 6)"


def test_non_numeric_value(tmp_path):
    lines = _official_lines()
    lines[3] = lines[3].replace("21.456", "fast")  # data row 3: decode 1 pooler baseline
    msg = _error(load_official, _write(tmp_path, lines))
    assert "bad.csv" in msg and "row 3" in msg and "'baseline_us'" in msg and "'fast'" in msg


def test_fractional_dimension_is_rejected(tmp_path):
    lines = _official_lines()
    lines[2] = lines[2].replace(",1,8192,1024,", ",1.5,8192,1024,")
    msg = _error(load_official, _write(tmp_path, lines))
    assert "row 2" in msg and "'M'" in msg


def test_duplicated_shape(tmp_path):
    lines = _official_lines()
    lines[3] = lines[2]  # data row 3 repeats row 2 (decode 1 / o)
    msg = _error(load_official, _write(tmp_path, lines))
    assert "row 3" in msg and "duplicate shape decode 1/o" in msg and "first at row 2" in msg


def test_missing_shape(tmp_path):
    lines = _official_lines()[:-1]  # drop verify 32 / router
    msg = _error(load_official, _write(tmp_path, lines))
    assert "bad.csv" in msg and "after row 29" in msg and "'family'" in msg and "verify 32/router" in msg


def test_wrong_dimension_for_the_shape(tmp_path):
    lines = _official_lines()
    lines[4] = lines[4].replace("decode 1,unpooler,1,1024", "decode 1,unpooler,1,8192")
    msg = _error(load_official, _write(tmp_path, lines))
    assert "row 4" in msg and "'N'" in msg and "N=1024" in msg


def test_unknown_family(tmp_path):
    lines = _official_lines()
    lines[1] = lines[1].replace("qkv_gate", "qkv")
    msg = _error(load_official, _write(tmp_path, lines))
    assert "row 1" in msg and "'family'" in msg and "unknown shape" in msg


def test_ledger_bad_status_and_duplicate(tmp_path):
    lines = SEED_LEDGER_CSV.read_text().splitlines()
    bad = list(lines)
    bad[1] = bad[1].replace(",passed,", ",maybe,")
    msg = _error(load_ledger, _write(tmp_path, bad, "ledger.csv"))
    assert "ledger.csv" in msg and "row 1" in msg and "'status'" in msg
    dup = lines + [lines[1]]
    msg = _error(load_ledger, _write(tmp_path, dup, "ledger2.csv"))
    assert f"row {len(lines)}" in msg and "duplicate 001 check" in msg


def test_probe_non_numeric_and_duplicate(tmp_path):
    lines = SEED_PROBES_CSV.read_text().splitlines()
    bad = list(lines)
    bad[2] = bad[2].replace("5.79", "")
    msg = _error(load_seed_probes, _write(tmp_path, bad, "probes.csv"))
    assert "probes.csv" in msg and "row 2" in msg and "'us'" in msg
    dup = lines + [lines[1]]
    msg = _error(load_seed_probes, _write(tmp_path, dup, "probes2.csv"))
    assert "row 5" in msg and "'bytes'" in msg and "duplicate" in msg


def test_workload_json_errors_name_the_field(tmp_path):
    import json
    from datasets.paths import WORKLOAD_JSON

    spec = json.loads(WORKLOAD_JSON.read_text())
    spec["families"]["o"]["K"] = "1024"
    path = tmp_path / "workload.json"
    path.write_text(json.dumps(spec))
    msg = _error(load_workload, path)
    assert "workload.json" in msg and "families.o.K" in msg


# --- cells Python's int() / float() or the csv module would take silently or raise on -----------------------------
@pytest.mark.parametrize("change, row, field, words", [
    (lambda ls: ls.__setitem__(1, ls[1].replace(",8192,", ",8_192,", 1)), 1, "K", "expected an integer, got '8_192'"),
    (lambda ls: ls.__setitem__(1, ls[1].replace("qkv_gate,1,", "qkv_gate,1" + "0" * 5000 + ",", 1)), 1, "M",
     "expected an integer"),
    (lambda ls: ls.__setitem__(2, ls[2].rsplit(",", 1)[0] + ",1e308"), 2, "candidate_us",
     "expected a time in us of at most 1e+06 (1 s per call, as in run files), got 1e+308"),
    (lambda ls: ls.__setitem__(2, ls[2].rsplit(",", 1)[0] + ",1_0.5"), 2, "candidate_us", "expected a number"),
    (lambda ls: ls.__setitem__(1, ls[1].replace("decode 1", "dec\x00ode 1", 1)), 1, "load",
     "unknown shape 'dec\\x00ode 1/qkv_gate'"),
])
def test_cells_that_python_would_bend_are_refused(tmp_path, change, row, field, words):
    lines = _official_lines()
    change(lines)
    msg = _error(load_official, _write(tmp_path, lines))
    assert msg.startswith(f"bad.csv: row {row}, field {field!r}: ") and words in msg, msg


def test_a_cell_over_the_csv_field_limit_is_one_line(tmp_path):
    lines = _official_lines()
    lines[1] = lines[1].replace("decode 1", "x" * 200_000, 1)
    msg = _error(load_official, _write(tmp_path, lines))
    assert msg.startswith("bad.csv: file, field '(csv)': not a readable CSV table: field larger than field limit")
