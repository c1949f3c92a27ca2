"""Dataset and DataLoader for the char LM: random windows whose choice depends only on (seed, step).

Batch ``b`` of a run is drawn from a generator seeded with ``(seed, b)``, so a resumed run and an
uninterrupted one see the same batches, and under DDP rank ``r`` of ``w`` takes rows ``r::w`` of the
same global batch a single process would see.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

__all__ = ["CharWindows", "Shard", "StepBatchSampler", "eval_offsets", "make_loader", "seed_worker"]


@dataclass(frozen=True)
class Shard:
    """This process's part of every global batch: rank ``rank`` of ``world_size`` (DDP), or the whole."""

    rank: int = 0
    world_size: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank={self.rank} must be in [0, world_size={self.world_size})")


class CharWindows(Dataset):
    """Window at ``offset``: ``x = ids[o : o+T]``, ``y = ids[o+1 : o+T+1]`` (the label shift), both int64."""

    def __init__(self, ids: torch.Tensor, block_size: int) -> None:
        if ids.numel() < block_size + 1:
            raise ValueError(f"{ids.numel()} characters cannot fill one window of {block_size} + 1")
        self.ids = ids
        self.block_size = block_size

    def __len__(self) -> int:
        return self.ids.numel() - self.block_size

    def __getitem__(self, offset: int) -> tuple[torch.Tensor, torch.Tensor]:
        chunk = self.ids[offset : offset + self.block_size + 1].long()  # (T + 1,)
        return chunk[:-1], chunk[1:]  # (T,), (T,)


class StepBatchSampler(Sampler[list[int]]):
    """Yields, for micro-batch ``b = start, start + 1, ...``, this rank's rows of global batch ``b``.

    Global batch ``b`` is ``batch_size * world_size`` offsets drawn uniformly by a generator seeded with
    ``seed * 1_000_003 + b``; rank ``r`` keeps rows ``r * batch_size`` to ``(r + 1) * batch_size``.
    """

    def __init__(
        self,
        n_windows: int,
        *,
        batch_size: int,
        seed: int,
        start: int = 0,
        stop: int | None = None,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        self.n_windows, self.batch_size, self.seed = n_windows, batch_size, seed
        self.start, self.stop, self.rank, self.world_size = start, stop, rank, world_size

    def __len__(self) -> int:
        if self.stop is None:
            raise TypeError("an endless StepBatchSampler has no length")
        return max(0, self.stop - self.start)

    def __iter__(self) -> Iterator[list[int]]:
        b = self.start
        while self.stop is None or b < self.stop:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + b)
            rows = torch.randint(self.n_windows, (self.batch_size * self.world_size,), generator=g)
            mine = rows[self.rank * self.batch_size : (self.rank + 1) * self.batch_size]
            yield mine.tolist()
            b += 1


def seed_worker(worker_id: int) -> None:
    """``worker_init_fn``: seed Python's ``random`` in each worker from torch's per-worker seed
    (the PyTorch "Reproducibility" note). numpy is not used by the dataset."""
    random.seed(torch.initial_seed() % 2**32)


def make_loader(
    ids: torch.Tensor,
    *,
    block_size: int,
    batch_size: int,
    seed: int,
    start: int = 0,
    stop: int | None = None,
    shard: Shard = Shard(),
    num_workers: int = 0,
) -> DataLoader:
    """The DataLoader of the loop: ``StepBatchSampler`` over ``CharWindows``, seeded workers.

    Micro-batches ``start`` to ``stop`` (None: endless) of the run seeded ``seed``; ``shard`` picks this
    process's rows of each global batch under DDP.
    """
    ds = CharWindows(ids, block_size)
    sampler = StepBatchSampler(
        len(ds),
        batch_size=batch_size,
        seed=seed,
        start=start,
        stop=stop,
        rank=shard.rank,
        world_size=shard.world_size,
    )
    return DataLoader(
        ds,
        batch_sampler=sampler,
        num_workers=num_workers,
        worker_init_fn=seed_worker,
        generator=torch.Generator().manual_seed(seed),
        persistent_workers=num_workers > 0,
    )


def eval_offsets(n_chars: int, *, block_size: int, n_windows: int) -> list[int]:
    """Evenly spaced window offsets over a split: the same val windows for every eval of every run."""
    last = n_chars - block_size - 1
    if last < 0:
        raise ValueError(f"{n_chars} characters cannot fill one window of {block_size} + 1")
    n = min(n_windows, last + 1)
    return [round(i * last / max(1, n - 1)) for i in range(n)]
