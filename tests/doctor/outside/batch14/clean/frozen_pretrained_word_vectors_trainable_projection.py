"""Text classifier on frozen "pretrained" word vectors with a trainable projection on top.

Unusual but correct: the word-vector table is loaded with nn.Embedding.from_pretrained(...,
freeze=True), so it never changes, while an MLP applied to each looked-up vector is trained
(only the lookup is frozen, not what comes after it). The optimizer is given only the
parameters that require grad, padding positions are excluded from the average with a mask, and
the script checks at the end that the vector table is bit-for-bit unchanged while the rest of
the model moved.

Source: https://github.com/facebookresearch/pytext/pull/76
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, VOCAB, DIM, MAXLEN, BATCH = 0, 200, 50, 16, 32

# stand-in for GloVe: words 1..99 lean "positive", 100..199 lean "negative" along a hidden axis
direction = F.normalize(torch.randn(DIM), dim=0)
vectors = torch.randn(VOCAB, DIM) * 0.5
polarity = torch.where(torch.arange(VOCAB) < 100, 1.0, -1.0)
vectors += 1.0 * polarity[:, None] * direction
vectors[PAD] = 0.0


def make_batch(n):
    lengths = torch.randint(4, MAXLEN + 1, (n,))
    x = torch.randint(1, VOCAB, (n, MAXLEN))
    x = x.masked_fill(torch.arange(MAXLEN)[None] >= lengths[:, None], PAD)
    score = (polarity[x] * (x != PAD)).sum(1)
    y = (score > 0).long()
    return x, y


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding.from_pretrained(vectors.clone(), freeze=True, padding_idx=PAD)
        self.proj = nn.Sequential(nn.Linear(DIM, 64), nn.Tanh())
        self.out = nn.Linear(64, 2)

    def forward(self, x):
        mask = (x != PAD).unsqueeze(-1).float()
        h = self.proj(self.emb(x)) * mask
        return self.out(h.sum(1) / mask.sum(1))


model = Classifier()
before_emb = model.emb.weight.detach().clone()
before_proj = model.proj[0].weight.detach().clone()
trainable = [p for p in model.parameters() if p.requires_grad]
print(f"trainable tensors: {len(trainable)} / {len(list(model.parameters()))}")
opt = torch.optim.Adam(trainable, lr=3e-3)

for step in range(200):
    x, y = make_batch(BATCH)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 40 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

with torch.no_grad():
    x, y = make_batch(512)
    print(f"held-out accuracy {(model(x).argmax(-1) == y).float().mean().item():.3f}")
print("embedding table unchanged:", torch.equal(before_emb, model.emb.weight))
print("projection updated:", not torch.equal(before_proj, model.proj[0].weight))
