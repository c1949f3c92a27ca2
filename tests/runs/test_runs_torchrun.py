"""Under torchrun (2 processes, gloo): rank 0 owns the record, every rank's metrics are kept."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from expkit.runs import list_runs

SCRIPT = textwrap.dedent("""
    import os, sys
    import torch
    import torch.distributed as dist
    from expkit.runs import start

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    with start(config={"world": dist.get_world_size()}, seed=3, store=sys.argv[1], name="ddp") as run:
        t = torch.tensor([float(rank + 1)])
        for step in range(3):
            dist.all_reduce(t)
            run.log(step, value=t.item(), rank=rank)
        print(f"rank {rank} run {run.id}", flush=True)
    dist.destroy_process_group()
""")


def _torchrun_2(source: str, tmp_path: Path) -> None:
    """Run ``source`` under ``torchrun --nproc_per_node=2`` with the store ``tmp_path/s``; it must exit 0."""
    script = tmp_path / "script.py"
    script.write_text(source)
    torchrun = Path(sys.executable).with_name("torchrun")
    res = subprocess.run(
        [str(torchrun), "--standalone", "--nproc_per_node=2", str(script), str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr[-3000:]


def test_two_process_torchrun_shares_one_record(tmp_path: Path) -> None:
    _torchrun_2(SCRIPT, tmp_path)
    (run,) = list_runs(tmp_path / "s").runs
    assert run.status == "finished" and run.name == "ddp"
    run_dir = tmp_path / "s" / run.id
    rec = json.loads((run_dir / "run.json").read_text())
    assert rec["world_size"] == 2 and rec["config"] == {"world": 2}
    rank0 = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    rank1 = [json.loads(line) for line in (run_dir / "metrics.rank1.jsonl").read_text().splitlines()]
    assert [r["rank"] for r in rank0] == [0, 0, 0] and [r["rank"] for r in rank1] == [1, 1, 1]
    # all_reduce of 1 and 2 gives 3, then 6, then 12 on both ranks
    assert [r["value"] for r in rank0] == [r["value"] for r in rank1] == [3.0, 6.0, 12.0]


def test_exec_of_torchrun_keeps_every_rank(tmp_path: Path) -> None:
    from expkit.runs.execute import ExecRequest, execute

    script = tmp_path / "ddp.py"
    script.write_text(SCRIPT)
    torchrun = Path(sys.executable).with_name("torchrun")
    res = execute(
        ExecRequest(
            [str(torchrun), "--standalone", "--nproc_per_node=2", str(script), str(tmp_path / "ignored")],
            store=tmp_path / "s",
            cwd=tmp_path,
            seed=5,
        )
    )
    assert res.status == "finished", (Path(res.run_dir) / "output.log").read_text()[-2000:]
    run_dir = Path(res.run_dir)
    rec = json.loads((run_dir / "run.json").read_text())
    assert rec["attached"] and rec["config"] == {"world": 2} and rec["seed"]["seed"] == 3
    assert len((run_dir / "metrics.rank1.jsonl").read_text().splitlines()) == 3
    assert [p.name for p in (tmp_path / "s").iterdir() if p.is_dir()] == [run_dir.name]  # no second record


PRINTING = textwrap.dedent("""
    import json, os
    rank = int(os.environ["RANK"])
    for step in range(3):
        print(json.dumps({"step": step, "loss": 1.0 / (step + 1) + rank}), flush=True)
""")


@pytest.mark.parametrize("template", [None, "[rank${rank}]:"])
def test_exec_of_torchrun_tags_printed_metrics_with_their_rank(tmp_path: Path, monkeypatch, template) -> None:
    """Issue 14: both ranks' printed lines went to one file without a rank, "final" from whoever printed
    last. `torchrun --tee 3` prefixes each line with "[default<local rank>]:" (or the template's)."""
    from expkit.runs.execute import ExecRequest, execute

    if template:
        monkeypatch.setenv("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", template)
    script = tmp_path / "p.py"
    script.write_text(PRINTING)
    torchrun = Path(sys.executable).with_name("torchrun")
    res = execute(
        ExecRequest(
            [str(torchrun), "--standalone", "--nproc_per_node=2", "--tee", "3", str(script)],
            store=tmp_path / "s",
            cwd=tmp_path,
            seed=5,
        )
    )
    assert res.status == "finished", (Path(res.run_dir) / "output.log").read_text()[-2000:]
    rec = json.loads((Path(res.run_dir) / "run.json").read_text())
    assert rec["final_metrics"] == {"step": 2, "loss": pytest.approx(1 / 3)}  # rank 0 owns final
    assert rec["final_metrics_by_rank"] == {"1": {"step": 2, "loss": pytest.approx(1 + 1 / 3)}}


SLOW_RANK = textwrap.dedent("""
    import sys, time
    import torch.distributed as dist
    from expkit.runs import start

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    with start(config={}, seed=3, store=sys.argv[1], name="slow-rank") as run:
        for step in range(15):
            run.log(step, loss=float(step))
        dist.barrier()
        if rank == 1:  # rank 0 closes first; rank 1 logs its second half a second later, then closes
            time.sleep(1.0)
            for step in range(15, 30):
                run.log(step, loss=float(step))
    dist.destroy_process_group()
""")


def test_rank0_reads_the_other_ranks_after_they_flushed(tmp_path: Path) -> None:
    # issue 21 item 2: rank 0 summarized rank 1's file before it was flushed (step 15 of 30 in the record)
    _torchrun_2(SLOW_RANK, tmp_path)
    (run,) = list_runs(tmp_path / "s").runs
    rec = json.loads((tmp_path / "s" / run.id / "run.json").read_text())
    assert rec["final_metrics_by_rank"]["1"]["step"] == 29
    assert not any("no flush marker" in n for n in rec["metric_notes"])
