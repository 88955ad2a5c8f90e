"""datasets.devices: one table of devices keyed by the driver's names, each fact with its source; a device not in the
table (a CPU, an unknown GPU) has unknown facts, never another device's; the kernels' limits are read from the device
where a process has one; adding a device is one entry (a fake one is added here and a run of it rendered)."""
import json
from dataclasses import replace
from pathlib import Path

import pytest

from datasets import devices

ROOT = Path(__file__).resolve().parents[2]
SYNTHETIC = ROOT / "tests" / "fixtures" / "app" / "synthetic_a.json"


@pytest.mark.parametrize("name, key, tbps, sms", [
    ("NVIDIA H200", "NVIDIA H200", 4.8, 132),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM", 3.35, 132),
    ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe", 2.0, 114),
    ("NVIDIA B200", "NVIDIA B200", 8.0, None),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM4 80GB", 2.039, 108),
    ("nvidia  a100 80gb pcie", "NVIDIA A100 PCIe 80GB", 1.935, 108),
])
def test_the_driver_name_finds_its_entry_and_every_fact_says_its_source(name, key, tbps, sms):
    dev = devices.lookup(name)
    assert dev.key == key and dev.in_table and not dev.is_cpu
    assert dev.hbm_tbps.value == tbps and "datasheet" in dev.hbm_tbps.source
    assert dev.bf16_tflops.known and "sparsity" in dev.bf16_tflops.source   # the dense rate, said so
    assert dev.sm_count.value == sms and (dev.sm_count.source if sms else True)
    assert dev.arch.smem_per_block_bytes.known and "Programming Guide" in dev.arch.smem_per_block_bytes.source


@pytest.mark.parametrize("name, kind", [("CPU: AMD EPYC 7B13", devices.CPU), ("NVIDIA L4", devices.GPU),
                                        ("", devices.GPU), (None, devices.GPU)])
def test_a_device_not_in_the_table_has_unknown_facts_never_another_devices(name, kind):
    dev = devices.lookup(name)
    assert dev.kind == kind and not dev.in_table
    facts = [dev.hbm_tbps, dev.bf16_tflops, dev.sm_count, dev.arch.smem_per_block_bytes]
    assert not any(f.known for f in facts)
    assert devices.fact_text(dev.hbm_tbps, "TB/s").startswith("unknown: ")
    limits = devices.limits(dev)
    assert not limits.sm_count.known and not limits.smem_per_block_bytes.known


def test_limits_are_read_from_the_device_where_it_reports_them():
    class Props:   # what torch.cuda.get_device_properties reports (an H100 PCIe with made-up limits of its own)
        name, multi_processor_count, shared_memory_per_block_optin = "NVIDIA H100 PCIe", 113, 101 * 1000
        shared_memory_per_multiprocessor, regs_per_multiprocessor = 102 * 1000, 65536

    lim = devices.limits(devices.lookup(Props.name), Props())
    assert lim.sm_count.value == 113 and "reported by the device" in lim.sm_count.source
    assert lim.smem_per_block_bytes.value == 101000 and "reported by the device" in lim.smem_per_block_bytes.source
    # a property the device does not report: the table's (its compute capability's), said so
    lim = devices.limits(devices.lookup("NVIDIA B200"), type("P", (), {"multi_processor_count": 148})())
    assert lim.sm_count.value == 148 and "Programming Guide" in lim.smem_per_sm_bytes.source
    assert devices.same_kind("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB")
    assert not devices.same_kind("NVIDIA H100 80GB HBM3", "NVIDIA H200")
    assert not devices.same_kind("CPU: one", "NVIDIA H200")


FAKE = devices.Device("Fakelab Z9", "Z9", devices.GPU, ("Fakelab Z9 96GB",), "HBM4",
                      devices.Fact(7.25, "Fakelab Z9 datasheet"), devices.Fact(1234.0, "Fakelab Z9 datasheet"),
                      devices.Fact(77, "Fakelab Z9 datasheet"), devices.SM90)


def _run_of(tmp_path, gpu: str) -> Path:
    run = json.loads(SYNTHETIC.read_text())
    run["environment"]["gpu"] = gpu
    path = tmp_path / "2000-01-09_fakelab-z9-96gb_synthetic-z9.json"
    path.write_text(json.dumps(run))
    return path


def test_adding_a_device_is_one_entry_and_a_run_of_it_renders_its_own_facts(tmp_path, monkeypatch, capsys):
    """One entry in DEVICES, nothing else: a run whose driver name is the fake's renders the fake's datasheet line,
    and no other device's figure; its comparisons have no band (no repeat evidence on it), said so."""
    from dashboard.cli import main as cli
    from dashboard.model import compare, runs, views
    from dashboard.plots import roofline_figures
    from dashboard.documents import report

    monkeypatch.setattr(devices, "DEVICES", (*devices.DEVICES, FAKE))
    path = _run_of(tmp_path, "Fakelab Z9 96GB")
    data = runs.load_run_data(path)
    assert devices.of_run(data.run) == FAKE
    pts = views.roofline_points(runs.shape_table(data, data.workload), ["baseline", "seed036"])
    fig = roofline_figures.roofline(pts, 4.0, 700.0, "measured", device=devices.device_of(data.run))
    names = [t.name for t in fig.data]
    assert "Z9 datasheet 7.25 TB/s (reference)" in names and not any("4.8" in str(n) for n in names)
    rep = report.build(data, "baseline", "seed036", source="measured")
    md = rep.markdown()
    assert "4.8 TB/s" not in md
    # the H200 is named only where a line describes committed H200 data (left out here, or the glossary's note)
    assert all("measured on NVIDIA H200, not Fakelab Z9" in line or "the committed runs: an H200" in line
               for line in md.splitlines() if "H200" in line)
    assert "Z9 datasheet 7.25 TB/s (reference)" in [t.name for f in rep.figures for t in f.data]
    cmp = compare.compare_runs(data, "baseline", data, "seed036")
    assert set(cmp.loads["verdict"]) == {"NO VERDICT"}
    assert cmp.loads["band_source"].str.contains("no repeat evidence on Fakelab Z9 96GB").all()
    assert not cmp.loads["band_source"].str.contains("H200").any()
    assert cli.main(["compare", f"{path}:baseline", f"{path}:seed036"]) == 0
    out = capsys.readouterr().out
    assert "NO VERDICT" in out and "H200" not in out and "FAST" not in out
    # without the entry, the same run draws no datasheet line at all (unknown, never another device's)
    monkeypatch.setattr(devices, "DEVICES", tuple(d for d in devices.DEVICES if d != FAKE))
    fig = roofline_figures.roofline(pts, 4.0, 700.0, "measured", device="Fakelab Z9 96GB")
    assert not any("datasheet" in str(t.name) for t in fig.data)


def test_the_h200_keeps_its_committed_figures():
    h200 = devices.lookup("NVIDIA H200")
    assert replace(h200).hbm_tbps.value == 4.8 and h200.sm_count.value == 132
    assert devices.lookup(devices.WRITEUP_DEVICE) == h200
