"""Two-process DDP (gloo) training of a tiny BERT sequence classifier on synthetic text.

Each rank reads its shard through a DistributedSampler(shuffle=True), but the
training loop never calls sampler.set_epoch(epoch). DistributedSampler seeds its
permutation with seed + epoch, so without set_epoch every epoch replays exactly
the same ordering and the same mini-batch composition on every rank: the data is
never reshuffled across epochs. Nothing fails; the loss goes down, just with the
same fixed batches each epoch.

Source: https://github.com/Snowdar/asv-subtools/issues/8
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from transformers import BertConfig, BertForSequenceClassification

WORLD, EPOCHS, V, T, KEY = 2, 6, 30, 10, 7


def build_data(n=192):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, V, (n, T), generator=g)
    ids[:, 0] = 1  # [CLS]
    ids[ids == KEY] = KEY + 1
    labels = torch.randint(0, 2, (n,), generator=g)
    for _ in range(3):
        pos = torch.randint(1, T, (n,), generator=g)
        ids[labels == 1, pos[labels == 1]] = KEY  # positives contain the keyword
    return TensorDataset(ids, labels)


def run(rank):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ["B17_PORT"]
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    torch.set_num_threads(2)

    cfg = BertConfig(
        vocab_size=V,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=T,
        num_labels=2,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = DDP(BertForSequenceClassification(cfg))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3)

    ds = build_data()
    sampler = DistributedSampler(ds, num_replicas=WORLD, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=16, sampler=sampler)

    for epoch in range(EPOCHS):  # BUG-LINE
        total = 0.0
        for ids, y in loader:
            out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=y)
            opt.zero_grad()
            out.loss.backward()
            opt.step()
            total += out.loss.item()
        if rank == 0:
            print(f"epoch {epoch} mean loss {total / len(loader):.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ["B17_PORT"] = str(29500 + random.randint(0, 2000))
    mp.spawn(run, nprocs=WORLD, join=True)
