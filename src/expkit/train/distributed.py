"""DDP through ``torchrun``: read the launcher's environment, start the process group (gloo on CPU,
NCCL on CUDA), and say which rank owns the run record. A plain ``python`` run is world size 1.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

__all__ = ["DistContext", "all_reduce_mean", "init_distributed", "shutdown_distributed"]


@dataclass(frozen=True)
class DistContext:
    """This process's place in the job. ``is_main`` (rank 0) writes the run record and checkpoints."""

    rank: int
    local_rank: int
    world_size: int
    backend: str | None
    device: str
    owns_group: bool = False  # init_distributed started the process group (shutdown_distributed ends it)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def init_distributed(device: str) -> DistContext:
    """Join the torchrun job when ``WORLD_SIZE`` > 1 (gloo for ``cpu``, nccl for ``cuda``).

    Under torchrun with CUDA, each rank takes ``cuda:<LOCAL_RANK>``.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if world <= 1:
        return DistContext(0, 0, 1, None, device)
    import torch.distributed as dist

    backend = "nccl" if device.startswith("cuda") else "gloo"
    if device.startswith("cuda"):
        device = f"cuda:{local}"
        torch.cuda.set_device(local)
    owns = not dist.is_initialized()
    if owns:
        dist.init_process_group(backend=backend)
    return DistContext(rank, local, world, backend, device, owns_group=owns)


def shutdown_distributed(ctx: DistContext) -> None:
    """End the process group that ``init_distributed`` started (one the caller started is left to it). Left to
    the interpreter's exit, gloo's threads are torn down in no set order: a rank then aborted now and then
    ("terminate called without an active exception", SIGABRT, seen in a two-process test at load 5)."""
    if ctx.enabled and ctx.owns_group:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()


def all_reduce_mean(value: torch.Tensor, ctx: DistContext) -> torch.Tensor:
    """Mean of ``value`` over ranks (a copy; unchanged in a single process)."""
    if not ctx.enabled:
        return value
    import torch.distributed as dist

    out = value.detach().clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out / ctx.world_size
