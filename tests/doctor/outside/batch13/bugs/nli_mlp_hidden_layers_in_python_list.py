"""Sentence-pair (NLI-style) classifier: bag-of-embeddings encoder + stacked hidden MLP layers.

Source: https://github.com/pytorch/pytorch/issues/715

Bug: the hidden layers are created in `__init__` and stored in a plain Python list. `nn.Module`
does not register modules held in a list, so their weights are missing from `model.parameters()`:
the optimizer never updates them and they stay at their random initialisation (they are still
used in forward). Only the embeddings and the final classifier train. The loss goes down, so
nothing looks wrong, but the model learns much less than it should. Fix: wrap them in
`nn.ModuleList`.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB = 60
N_HID = 64


def make_pairs(n, gen):
    # label 0: hypothesis shares topic with premise (entail), 1: different topic, 2: negated topic
    topics = torch.randint(0, 5, (n,), generator=gen)
    y = torch.randint(0, 3, (n,), generator=gen)
    prem = 10 + topics[:, None] * 8 + torch.randint(0, 8, (n, 6), generator=gen)
    hyp_topic = torch.where(y == 1, (topics + 1 + torch.randint(0, 4, (n,), generator=gen)) % 5, topics)
    hyp = 10 + hyp_topic[:, None] * 8 + torch.randint(0, 8, (n, 4), generator=gen)
    neg = torch.where(y == 2, torch.full((n,), 2), torch.randint(3, 10, (n,), generator=gen))
    hyp = torch.cat([hyp, neg[:, None]], 1)
    return prem, hyp, y


class NLIClassifier(nn.Module):
    def __init__(self, n_layers=2):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32)
        self.proj = nn.Linear(4 * 32, N_HID)
        self.hids = [nn.Linear(N_HID, N_HID) for _ in range(n_layers)]  # BUG-LINE
        self.classifier = nn.Linear(N_HID, 3)

    def forward(self, prem, hyp):
        u = self.emb(prem).mean(1)
        v = self.emb(hyp).mean(1)
        h = F.relu(self.proj(torch.cat([u, v, (u - v).abs(), u * v], -1)))
        for layer in self.hids:
            h = F.relu(layer(h))
        return self.classifier(h)


def main():
    gen = torch.Generator().manual_seed(0)
    prem, hyp, y = make_pairs(768, gen)
    model = NLIClassifier()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    print("trainable tensors:", len(list(model.parameters())))
    bs = 64
    for epoch in range(5):
        perm = torch.randperm(len(y))
        tot, correct = 0.0, 0
        for i in range(0, len(y), bs):
            idx = perm[i : i + bs]
            logits = model(prem[idx], hyp[idx])
            loss = F.cross_entropy(logits, y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(idx)
            correct += (logits.argmax(1) == y[idx]).sum().item()
        print(f"epoch {epoch} loss {tot / len(y):.4f} acc {correct / len(y):.3f}")


if __name__ == "__main__":
    main()
