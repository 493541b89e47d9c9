"""The loader on a real chip: memory, rings, freelists and the leak check."""

from __future__ import annotations

from pathlib import Path

from npkit.sim.loader import leak_check, load_manifest

LOADER_MANIFEST = """
chip = "ixp2800"
[[image]]
source = "spin.uc"
[[ring]]
number = 2
base_word = 256
size_words = 128
[[freelist]]
channel = 1
queue = 5
descriptor_base = 0x2000
descriptor_bytes = 64
count = 10
[[memory]]
unit = "scratch"
address = 0x40
words = [7, 8]
[[memory]]
unit = "sram3"
address = 0x10
words = [0xdeadbeef]
[[memory]]
unit = "dram"
address = 0x100
words = [0x01020304, 0xa0b0c0d0]
"""


def test_loader_builds_memory_rings_and_freelists(tmp_path: Path) -> None:
    (tmp_path / "spin.uc").write_text(".me 4\nloop#:\n    br[loop#]\n")
    (tmp_path / "run.toml").write_text(LOADER_MANIFEST)
    run = load_manifest(tmp_path / "run.toml")
    chip = run.chip
    assert [img.mes for img in run.images] == [[4]]
    assert [int(w) for w in chip.scratch()[0x40 // 4:0x40 // 4 + 2]] == [7, 8]
    assert int(chip.sram(3)[0x10 // 4]) == 0xDEADBEEF
    # DRAM holds the words in network byte order
    assert bytes(chip.dram()[0x100:0x108]) == bytes.fromhex("01020304a0b0c0d0")
    state = chip.ring_state(2)
    assert (state["base"], state["size"], state["count"]) == (256, 128, 0)
    expected = [(1 << 26) | (0x2000 + 64 * i) for i in range(10)]
    assert chip.queue_handles(1, 5) == expected
    assert all(r.ok for r in leak_check(run))
    chip.dequeue(1, 5)
    chip.dequeue(1, 5)
    (report,) = leak_check(run)
    assert (report.initial, report.now, report.missing, report.ok) == (10, 8, 2, False)
    assert "2 of 10 buffers not returned" in report.describe()
