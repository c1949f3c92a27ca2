"""A real FSDP2 run on the CPU (gloo, 2 processes): how much of the model each rank holds.

Used by lab C4.3 to show sharding is not a formula only. Needs ``torch.distributed`` with gloo and
``torch.distributed.fsdp.fully_shard`` (FSDP2, torch >= 2.4).
"""

from __future__ import annotations

import os
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from expkit.errors import MissingDependency

__all__ = ["FsdpShards", "measure_fsdp_shards"]


@dataclass(frozen=True)
class FsdpShards:
    """Per-rank parameter elements and bytes held after ``fully_shard`` and after one training step.

    ``local_state_bytes`` counts each rank's parameter shards, their gradients and AdamW state.
    """

    world_size: int
    total_params: int
    local_params: tuple[int, ...]
    local_state_bytes: tuple[int, ...]
    unsharded_state_bytes: int
    backend: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank: int, world: int, port: int, out_dir: str, hidden: int, layers: int) -> None:
    import json

    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import DTensor

    def local_numel(t: torch.Tensor | None) -> int:
        """Elements of this rank's shard: fully_shard turns parameters (and so their gradients) into DTensors."""
        if not isinstance(t, DTensor):
            raise TypeError(f"expected a DTensor after fully_shard, got {type(t).__name__}")
        return t.to_local().numel()

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        model = torch.nn.Sequential(*[torch.nn.Linear(hidden, hidden) for _ in range(layers)])
        total = sum(p.numel() for p in model.parameters())
        mesh = init_device_mesh("cpu", (world,))
        for block in model:
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
        local = sum(local_numel(p) for p in model.parameters())
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x = torch.randn(4, hidden)
        model(x).pow(2).mean().backward()
        opt.step()
        state = sum(local_numel(p) * 4 + local_numel(p.grad) * 4 for p in model.parameters())
        state += sum(local_numel(v) * 4 for s in opt.state.values() for k, v in s.items() if k != "step")
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps({"total": total, "local": local, "state": state}))
    finally:
        dist.destroy_process_group()


def measure_fsdp_shards(*, world_size: int = 2, hidden: int = 256, layers: int = 4) -> FsdpShards:
    """Shard a small MLP with FSDP2 over ``world_size`` CPU processes (gloo), step AdamW once, and report
    what each rank holds.

    Raises:
        MissingDependency: torch without gloo or without FSDP2 (``torch.distributed.fsdp.fully_shard``).
    """
    import json

    import torch.distributed as dist

    if not dist.is_available() or not dist.is_gloo_available():
        raise MissingDependency("torch.distributed with gloo is not available in this torch build")
    try:
        from torch.distributed.fsdp import fully_shard  # noqa: F401
    except ImportError as exc:
        raise MissingDependency("FSDP2 (torch.distributed.fsdp.fully_shard) needs torch >= 2.4") from exc
    import subprocess
    import sys

    # one fresh interpreter per rank (as torchrun does): no fork of a threaded parent, no re-import of __main__
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "import sys; from expkit.memory.sharding import _worker; "
                    "_worker(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), "
                    "int(sys.argv[6]))",
                    str(r),
                    str(world_size),
                    str(port),
                    tmp,
                    str(hidden),
                    str(layers),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for r in range(world_size)
        ]
        errors = []
        for r, proc in enumerate(procs):
            try:
                _, err = proc.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
                errors.append(f"rank {r}: timed out after 300 s")
                continue
            if proc.returncode != 0:
                errors.append(
                    f"rank {r} exited {proc.returncode}: {err.strip().splitlines()[-1] if err.strip() else ''}"
                )
        if errors:
            raise RuntimeError("FSDP2 run failed: " + "; ".join(errors))
        ranks = [json.loads(Path(tmp, f"rank{r}.json").read_text()) for r in range(world_size)]
    total = ranks[0]["total"]
    return FsdpShards(
        world_size=world_size,
        total_params=total,
        local_params=tuple(r["local"] for r in ranks),
        local_state_bytes=tuple(r["state"] for r in ranks),
        unsharded_state_bytes=16 * total,
        backend="gloo",
    )
