"""The ncu CSV parser on output captured on the H200 (tests/fixtures/ncu/README.md): re-parsing the raw CSVs behind
the committed explain run reproduces its `kernels` list exactly; ncu's own lines, units, separators and bad cells."""
import json
from pathlib import Path

import pytest

from profiler.measure import ncu
from profiler.commands.explain import make_jobs
from profiler.commands.sweep import select_shapes

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "ncu"
RUN = ROOT / "datasets" / "runs" / "2026-12-01_nvidia-h200_explain-baseline-best.json"
CSVS = sorted(FIX.glob("2026-12-01_nvidia-h200_explain-baseline-best_ncu-*.csv"))
RUNTIME = FIX / "2026-12-01_nvidia-h200_runtime-print.csv"


def test_reparsing_the_committed_csvs_reproduces_the_runs_kernel_records():
    run = json.loads(RUN.read_text())
    assert CSVS, f"no raw ncu CSVs in {FIX}"
    records = {}
    for path in CSVS:
        records.update(ncu.kernel_records(ncu.parse_raw_csv(path.read_text(), path.name)))
    jobs = {j.job: j for _, js in make_jobs(select_shapes("official"), run["environment"]["settings"]["candidates"])
            for j in js}
    rebuilt = []
    for job, recs in sorted(records.items()):
        j = jobs[job]
        base = {k: j.shape[k] for k in ("load", "family", "M", "N", "K")} | {"candidate": j.name}
        rebuilt += [base | r for r in recs]
    committed = [{k: v for k, v in rec.items() if k != "method"} for rec in run["kernels"]]
    key = lambda r: (r["load"], r["family"], r["candidate"], r["index"])
    assert sorted(rebuilt, key=key) == sorted(committed, key=key)


def test_one_record_read_by_hand_from_the_csv():
    """decode 1/qkv_gate baseline, row 0 of ncu-0: '37,782,272' bytes read, 13,792 ns, grid 100 (4, 25, 1)."""
    recs = ncu.kernel_records(ncu.parse_raw_csv(CSVS[0].read_text()))[0]
    assert [r["kernel"] for r in recs] == ["nvjet_sm90_tst_128x8_64x12_4x1_v_bz_splitK_TNT",
                                           "cublasLt::splitKreduce_kernel"]
    first = recs[0]
    assert (first["dram_read_bytes"], first["duration_us"], first["grid"], first["grid_dims"]) == \
        (37782272, 13.792, 100, "(4, 25, 1)")
    assert first["launches"] == 2 and first["shared_bytes"] == 225636 and first["registers"] == 168


def test_runtime_print_with_ncu_lines_and_every_raw_column():
    text = RUNTIME.read_text()
    assert text.startswith("==WARNING==")  # ncu's own lines share stdout with the CSV
    rows = ncu.parse_raw_csv(text, RUNTIME.name)
    assert len(rows) == 16
    assert rows[0]["range"] == "projlab qkv_gate M16 baseline" and rows[0]["job"] is None
    assert rows[0]["dram_read_bytes"] == 38027776
    assert ncu.kernel_records(rows) == {}  # ranges without a job number are not projlab explain jobs


@pytest.mark.parametrize("full,short", [
    ("void cublasLt::splitKreduce_kernel<32, 16, int, float>(cublasLt::cublasSplitKParams<T6>, const T4 *)",
     "cublasLt::splitKreduce_kernel"),
    ("void dot_kernel<float, 128, 0, cublasDotParams<cublasGemvTensorStridedBatched<const float>>>(T4)", "dot_kernel"),
    ("void at::unrolled_elementwise_kernel<at::direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() "
     "(instance 3)]>(int, T1)", "at::unrolled_elementwise_kernel"),
    ("nvjet_sm90_tst_64x16_64x16_4x1_v_bz_splitK_TNT", "nvjet_sm90_tst_64x16_64x16_4x1_v_bz_splitK_TNT"),
])
def test_short_names(full, short):
    assert ncu.short_name(full) == short


def _header_and_rows(text):
    lines = text.splitlines()
    return lines[0], lines[1], lines[2:]


def test_a_unit_other_than_base_is_refused_naming_the_metric():
    header, units, rows = _header_and_rows(CSVS[0].read_text())
    cells = units.split(",")
    col = header.split(",").index('"dram__bytes_read.sum"')
    cells[col] = '"Mbyte"'
    with pytest.raises(ncu.NcuError, match=r"dram__bytes_read.sum is in 'Mbyte', expected 'byte'"):
        ncu.parse_raw_csv("\n".join([header, ",".join(cells), *rows]), "x.csv")


def test_a_missing_metric_column_is_named():
    text = CSVS[0].read_text().replace('"lts__t_bytes.sum"', '"lts__other.sum"')
    with pytest.raises(ncu.NcuError, match=r"columns missing from ncu's CSV: \['lts__t_bytes.sum'\]"):
        ncu.parse_raw_csv(text, "x.csv")


def test_a_bad_cell_is_named_by_row_and_metric():
    header, units, rows = _header_and_rows(CSVS[0].read_text())
    bad = rows[0].replace('"13,792"', '"n/a"')
    with pytest.raises(ncu.NcuError, match=r"x.csv: row 1: gpu__time_duration.sum: expected a number, got 'n/a'"):
        ncu.parse_raw_csv("\n".join([header, units, bad, *rows[1:]]), "x.csv")


def test_text_without_a_csv_header_is_refused():
    with pytest.raises(ncu.NcuError, match="no CSV header"):
        ncu.parse_raw_csv("==PROF== Disconnected from process 1\n")


def test_nvtx_cells_and_versions():
    cell = '931  "<default domain>:projlab 12 router M16 best:none:none:none:none:none:none" '
    assert ncu.range_name(cell) == "projlab 12 router M16 best"
    assert ncu.job_of(ncu.range_name(cell)) == 12
    assert ncu.range_name('931  "<default domain>:other range:none:none:none:none:none:none" ') is None
    assert ncu.parse_version("NVIDIA (R) Nsight Compute\nVersion 2025.3.1.0 (build 36398880)") == "2025.3.1.0"
    assert ncu.parse_version("no version here") is None


def test_profiling_settings_are_the_documented_ones():
    """Clocks as in timing, a cold cache per kernel, only kernels inside projlab's NVTX ranges."""
    cmd = ncu.profile_command("ncu", "r.ncu-rep", ["python3", "t.py"])
    pairs = dict(zip(cmd, cmd[1:]))
    assert pairs["--clock-control"] == "none" and pairs["--cache-control"] == "all"
    assert pairs["--nvtx-include"] == "regex:^projlab /" and "--nvtx" in cmd
    assert cmd[-2:] == ["python3", "t.py"]


def test_missing_ncu_names_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("PROJLAB_NCU", str(tmp_path / "no-ncu"))
    assert ncu.find_ncu() is None
    with pytest.raises(ncu.NcuError, match=r"looked in \$PROJLAB_NCU \(.*no-ncu\), PATH, /usr/local/cuda/bin/ncu"):
        ncu.ncu_tool()
