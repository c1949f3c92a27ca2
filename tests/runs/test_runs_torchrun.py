"""Under torchrun (2 processes, gloo): rank 0 owns the record, every rank's metrics are kept."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from expkit.runs import list_runs

_HEAD = """\
import sys, time
import torch
import torch.distributed as dist
from expkit.runs import start

dist.init_process_group("gloo")
rank = dist.get_rank()
"""
_DDP_RUN = """\
with start(config={"world": dist.get_world_size()}, seed=3, store=sys.argv[1], name="ddp") as run:
    t = torch.tensor([float(rank + 1)])
    for step in range(3):
        dist.all_reduce(t)
        run.log(step, value=t.item(), rank=rank)
    print(f"rank {rank} run {run.id}", flush=True)
"""
_SLOW_RANK_RUN = """\
with start(config={}, seed=3, store=sys.argv[2], name="slow-rank") as run:
    for step in range(15):
        run.log(step, loss=float(step))
    dist.barrier()
    if rank == 1:  # rank 0 closes first; rank 1 logs its second half a second later, then closes
        time.sleep(1.0)
        for step in range(15, 30):
            run.log(step, loss=float(step))
"""
_TAIL = "dist.destroy_process_group()\n"
SCRIPT = _HEAD + _DDP_RUN + _TAIL
# One torchrun job (~7 CPU-s of three interpreters importing torch at load 20) gives both tests their run, each in
# its own store (rank 1 finds rank 0's run through a pointer file per store)
BOTH = _HEAD + _DDP_RUN + _SLOW_RANK_RUN + _TAIL


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """BOTH run once under ``torchrun --nproc_per_node=2`` (it must exit 0): the "ddp" run's store and the
    "slow-rank" run's."""
    tmp = tmp_path_factory.mktemp("torchrun")
    script = tmp / "script.py"
    script.write_text(BOTH)
    torchrun = Path(sys.executable).with_name("torchrun")
    res = subprocess.run(
        [str(torchrun), "--standalone", "--nproc_per_node=2", str(script), str(tmp / "s"), str(tmp / "slow")],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return tmp / "s", tmp / "slow"


def test_two_process_torchrun_shares_one_record(stores: tuple[Path, Path]) -> None:
    store = stores[0]
    (run,) = list_runs(store).runs
    assert run.status == "finished" and run.name == "ddp"
    run_dir = store / run.id
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


def test_rank0_reads_the_other_ranks_after_they_flushed(stores: tuple[Path, Path]) -> None:
    # issue 21 item 2: rank 0 summarized rank 1's file before it was flushed (step 15 of 30 in the record)
    store = stores[1]
    (run,) = list_runs(store).runs
    assert run.name == "slow-rank"
    rec = json.loads((store / run.id / "run.json").read_text())
    assert rec["final_metrics_by_rank"]["1"]["step"] == 29
    assert not any("no flush marker" in n for n in rec["metric_notes"])
