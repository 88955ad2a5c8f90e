"""datasets/devices.py is the one home of the devices' hardware numbers (datasets/hardware.py names the sm_90 ones the
kernels are sized by): no copy of them elsewhere in the source, and the H200's SM count agrees with what every
committed H200 run recorded from the device."""
import gzip
import re
from pathlib import Path

from datasets import devices, hardware

ROOT = Path(__file__).resolve().parents[2]
# A literal spelling of a shared-memory size (227 KB per block, 228 KB per SM) in Python source: the constants'
# copies this module replaced (kernels/cuda/*.cu keep theirs: C++ cannot import it; a test checks that copy).
COPIED = re.compile(r"\b22[78]\s*\*\s*1024\b|\b232448\b|\b233472\b")


def test_no_python_source_spells_a_shared_memory_size_itself():
    copies = []
    for folder in ("datasets", "kernels", "profiler", "dashboard", "app_pages", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path in (ROOT / "datasets" / "devices.py", Path(__file__).resolve()):
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if COPIED.search(line.split("#")[0]):
                    copies.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not copies, "hardware numbers belong in datasets/devices.py:\n" + "\n".join(copies)


def test_the_sm_count_is_the_one_every_h200_run_recorded():
    counts = set()
    for path in sorted((ROOT / "datasets" / "runs").glob("*nvidia-h200*.json*")):
        # The environment block sits at the top of a run file: its head is enough (a whole parse takes seconds).
        with (gzip.open(path, "rt") if path.suffix == ".gz" else path.open()) as f:
            head = f.read(1 << 16)
        counts.update(int(n) for n in re.findall(r'"sm_count":\s*(\d+)', head))
    assert counts == {devices.lookup("NVIDIA H200").sm_count.value}, counts


def test_shared_memory_numbers_fit_together():
    # A block's opt-in maximum is the SM's shared memory less the 1 KB the system keeps for that block.
    assert hardware.SMEM_PER_BLOCK_BYTES == hardware.SMEM_PER_SM_BYTES - hardware.SMEM_RESERVED_PER_BLOCK_BYTES
