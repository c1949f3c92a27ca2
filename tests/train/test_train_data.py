"""Batches depend on (seed, step) only: resume positions, DDP shards and worker processes see the same rows."""

from __future__ import annotations

import torch

from expkit.train.data import Shard, make_loader


def _batches(ids, n, **kw):
    it = iter(make_loader(ids, block_size=16, batch_size=4, seed=3, **kw))
    return [next(it) for _ in range(n)]


def test_start_offset_resumes_the_same_sequence():
    ids = torch.arange(1000) % 128
    full = _batches(ids, 5)
    later = _batches(ids, 2, start=3)
    for (x1, y1), (x2, y2) in zip(full[3:], later, strict=True):
        assert torch.equal(x1, x2) and torch.equal(y1, y2)


def test_labels_are_inputs_shifted_by_one():
    ids = torch.arange(1000) % 128
    ((x, y),) = _batches(ids, 1)
    assert torch.equal(x[:, 1:], y[:, :-1])


def test_ranks_split_the_single_process_global_batch():
    ids = torch.arange(5000) % 128
    it = iter(make_loader(ids, block_size=16, batch_size=8, seed=3))
    whole, _ = next(it)
    r0, _ = next(iter(make_loader(ids, block_size=16, batch_size=4, seed=3, shard=Shard(0, 2))))
    r1, _ = next(iter(make_loader(ids, block_size=16, batch_size=4, seed=3, shard=Shard(1, 2))))
    assert torch.equal(torch.cat([r0, r1]), whole)


def test_worker_processes_give_the_same_batches():
    ids = torch.arange(3000) % 128
    main = _batches(ids, 3)
    workers = _batches(ids, 3, num_workers=2)
    assert all(torch.equal(a[0], b[0]) for a, b in zip(main, workers, strict=True))
