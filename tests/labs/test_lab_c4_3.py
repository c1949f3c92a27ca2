import pytest

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c4_3_fsdp_ledger(tmp_path):
    res = run_lab(select_labs(["C4.3"])[0], out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert 12 < m["state_per_gpu"].value < 16 and m["state_per_gpu"].verdict.kind == "reproduced"
    assert m["state_one_gpu"].value > 7 * m["state_per_gpu"].value


@pytest.mark.slow
def test_fsdp2_on_cpu_halves_the_parameters():
    from expkit.memory.sharding import measure_fsdp_shards

    s = measure_fsdp_shards(world_size=2, hidden=64, layers=2)
    assert sum(s.local_params) == s.total_params == 2 * (64 * 64 + 64)
    assert s.local_params[0] == s.local_params[1]
    assert s.local_state_bytes[0] == 16 * s.local_params[0]  # weights, grads, m, v in fp32, each halved
