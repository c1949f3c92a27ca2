"""Lab C6.3 runs quick: the memory ledger's lines fall into the four blocks."""

from __future__ import annotations

from expkit.labs.lab_c6_3_memory_blocks import block_of
from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_block_names():
    assert [block_of(n) for n in ("fp32 master weights", "frozen base weights", "gradients", "Adam m",
                                  "activations", "logits / loss", "temporaries", "runtime overhead")] == [
        "weights", "weights", "gradients", "optimizer state", "activations", "activations", "activations", "other"]


def test_lab_c6_3_quick(tmp_path):
    (lab,) = select_labs(["C6.3"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert 90 < m["four_block_share"].value < 100  # the rest: CUDA context and allocator slack
    assert m["four_block_share"].verdict.kind == "reproduced"
    assert "optimizer state" in m["blocks_0.5B_full"].value
    assert (tmp_path / res.figures[0]).is_file()
