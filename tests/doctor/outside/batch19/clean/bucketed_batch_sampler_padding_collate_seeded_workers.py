"""Variable-length sequences with a bucketing batch sampler, padding collate and seeded workers (correct).

Unusual but correct data pipeline: a custom ``batch_sampler`` groups sequences
of similar length and reshuffles buckets every epoch with its own generator; a
collate function pads each batch and returns the true lengths; the GRU consumes
``pack_padded_sequence`` so padding never enters the recurrence; and the
DataLoader uses two worker processes with a ``worker_init_fn`` that seeds numpy
and ``random`` per worker plus a seeded ``torch.Generator`` so random jitter
augmentation differs across workers yet the run is reproducible.

Source: https://network-perspective.github.io/OpenShrike/library/checks/pytorch/test-pytorch-003-reproducible-multi-worker-dataloaders-seed-worker-processes/
"""

import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence
from torch.utils.data import DataLoader, Dataset, Sampler

torch.manual_seed(0)
torch.set_num_threads(2)


class NoisySeqDataset(Dataset):
    """Label = whether the sum of the sequence is positive; values get random jitter."""

    def __init__(self, n=1200):
        g = torch.Generator().manual_seed(11)
        self.seqs = [torch.randn(int(torch.randint(4, 30, (1,), generator=g)), generator=g) for _ in range(n)]
        self.labels = [int(s.sum() > 0) for s in self.seqs]

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        jitter = np.random.normal(0.0, 0.05, size=len(self.seqs[i])).astype("float32")
        return self.seqs[i] + torch.from_numpy(jitter), self.labels[i]


class BucketBatchSampler(Sampler):
    def __init__(self, lengths, batch_size, seed=0):
        self.lengths, self.batch_size, self.seed, self.epoch = lengths, batch_size, seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        order = sorted(range(len(self.lengths)), key=lambda i: (self.lengths[i], float(torch.rand(1, generator=g))))
        batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        perm = torch.randperm(len(batches), generator=g).tolist()
        return iter([batches[p] for p in perm])

    def __len__(self):
        return (len(self.lengths) + self.batch_size - 1) // self.batch_size


def pad_collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = pad_sequence(list(seqs), batch_first=True).unsqueeze(-1)
    return padded, lengths, torch.tensor(labels)


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


class GRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(1, 32, batch_first=True)
        self.out = nn.Linear(32, 2)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, h = self.gru(packed)
        return self.out(h[-1])


def main():
    ds = NoisySeqDataset()
    sampler = BucketBatchSampler([len(s) for s in ds.seqs], batch_size=64)
    g = torch.Generator().manual_seed(0)
    loader = DataLoader(
        ds,
        batch_sampler=sampler,
        collate_fn=pad_collate,
        num_workers=2,
        worker_init_fn=seed_worker,
        generator=g,
        persistent_workers=True,
    )
    model = GRUClassifier()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for epoch in range(4):
        sampler.set_epoch(epoch)
        tot, correct, n = 0.0, 0, 0
        for x, lengths, y in loader:
            logits = model(x, lengths)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(y)
            correct += (logits.argmax(-1) == y).sum().item()
            n += len(y)
        print(f"epoch {epoch} loss {tot / n:.4f} acc {correct / n:.3f}")


if __name__ == "__main__":
    main()
