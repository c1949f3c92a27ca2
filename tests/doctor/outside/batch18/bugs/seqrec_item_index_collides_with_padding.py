"""Next-item recommender whose item index map starts at 0, the padding index.

The preprocessing builds the item map from the popularity ranking with
enumerate(), so the most popular item gets index 0.  Histories are left-padded
with 0, the item embedding is created with padding_idx=0, the history encoder
masks positions where seq == 0, and the scoring layer is tied to the item
embedding table.  The most popular item is therefore (a) dropped from every
history as if it were padding, (b) embedded as a zero vector that never receives
gradient, and (c) always scored as h . 0 = 0.  Training runs and the loss falls,
but the model cannot use or properly rank the single most important item.

Source: https://github.com/jaywonchung/BERT4Rec-VAE-Pytorch/issues/3
"""

from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_ITEMS, HIST_LEN, D = 40, 8, 32
CONFIG = {"n_users": 2000, "lr": 3e-3, "epochs": 5, "batch": 128}


def simulate_sessions(n_users):
    """Each item has a fixed successor; the 'hub' item is visited very often and what follows
    it depends on the item seen before it."""
    gen = torch.Generator().manual_seed(1)
    succ = torch.randperm(N_ITEMS, generator=gen)
    after_hub = torch.randperm(N_ITEMS, generator=gen)
    raw = []
    for _ in range(n_users):
        cur = int(torch.randint(1, N_ITEMS, (1,), generator=gen))
        seq = [cur]
        while len(seq) < HIST_LEN + 1:
            if seq[-1] != 0 and torch.rand(1, generator=gen).item() < 0.4:
                nxt = 0
            elif seq[-1] == 0:
                nxt = int(after_hub[seq[-2]]) if len(seq) > 1 else 1
            else:
                nxt = int(succ[seq[-1]])
            seq.append(nxt)
        raw.append([f"sku_{i:03d}" for i in seq])
    return raw


def build_vocab(sessions):
    counts = Counter(tok for s in sessions for tok in s)
    ranked = [tok for tok, _ in counts.most_common()]
    return {tok: idx for idx, tok in enumerate(ranked)}  # BUG-LINE


def encode(sessions, smap):
    hist, target = [], []
    for s in sessions:
        ids = [smap[t] for t in s]
        for cut in range(3, len(ids)):
            h = ids[:cut][-HIST_LEN:]
            hist.append([0] * (HIST_LEN - len(h)) + h)
            target.append(ids[cut])
    return torch.tensor(hist), torch.tensor(target)


class GRURec(nn.Module):
    def __init__(self, n_vocab):
        super().__init__()
        self.item_emb = nn.Embedding(n_vocab, D, padding_idx=0)
        self.gru = nn.GRU(D, D, batch_first=True)
        self.out_bias = nn.Parameter(torch.zeros(n_vocab))

    def forward(self, seq):
        mask = seq != 0
        x = self.item_emb(seq) * mask.unsqueeze(-1)
        lengths = mask.sum(1).clamp_min(1)
        order = torch.argsort((~mask).int(), dim=1, stable=True)
        x = x.gather(1, order.unsqueeze(-1).expand_as(x))
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, h = self.gru(packed)
        return h[-1] @ self.item_emb.weight.T + self.out_bias


def main():
    sessions = simulate_sessions(CONFIG["n_users"])
    smap = build_vocab(sessions)
    hist, target = encode(sessions, smap)
    n = hist.shape[0]
    perm = torch.randperm(n)
    tr, te = perm[: int(0.85 * n)], perm[int(0.85 * n) :]
    model = GRURec(len(smap) + 1)
    opt = torch.optim.Adam(model.parameters(), lr=CONFIG["lr"])
    step = 0
    for epoch in range(CONFIG["epochs"]):
        for idx in tr[torch.randperm(len(tr))].split(CONFIG["batch"]):
            loss = F.cross_entropy(model(hist[idx]), target[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 100 == 0:
                print(f"epoch {epoch} step {step:4d} loss {loss.item():.4f}")
            step += 1
    with torch.no_grad():
        pred = model(hist[te]).argmax(-1)
        hit = (pred == target[te]).float()
        popular = target[te] == smap["sku_000"]
    print(
        f"test HR@1 overall {hit.mean().item():.3f}  "
        f"on most-popular-item targets {hit[popular].mean().item():.3f}  "
        f"on other targets {hit[~popular].mean().item():.3f}"
    )


if __name__ == "__main__":
    main()
