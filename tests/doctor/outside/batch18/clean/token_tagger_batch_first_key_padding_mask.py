"""Token tagger on nn.TransformerEncoder with batch_first=True and a boolean key-padding mask.

Source: https://github.com/om-ai-lab/OmDet/issues/19

The issue: attention layers fed ``(batch, seq, ...)`` tensors must be built
with ``batch_first=True``.  This program does that and also passes
``src_key_padding_mask`` in PyTorch's convention (``True`` = padding, i.e.
``ids == PAD``, the opposite of Hugging Face's ``attention_mask``), and uses
``ignore_index`` so padded positions carry no loss.  Task: tag every token
equal to the first token of its own sequence, which needs attention inside a
sequence.  Unusual parts: variable-length padded sequences, two different mask
conventions reconciled, ignore-index labels.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, PAD, D, MAXLEN = 24, 0, 64, 16


def make_batch(bs, gen):
    ids = torch.full((bs, MAXLEN), PAD)
    for i in range(bs):
        n = int(torch.randint(6, MAXLEN + 1, (1,), generator=gen))
        x = torch.randint(1, VOCAB, (n,), generator=gen)
        plant = torch.rand(n, generator=gen) < 0.3
        ids[i, :n] = torch.where(plant, x[0].expand(n), x)
    labels = (ids == ids[:, :1]).long()
    labels[ids == PAD] = -100
    return ids, labels


class TokenTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D, padding_idx=PAD)
        self.pos = nn.Embedding(MAXLEN, D)
        layer = nn.TransformerEncoderLayer(D, 4, 128, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(D, 2)

    def forward(self, ids):
        pos = torch.arange(ids.size(1)).unsqueeze(0)
        h = self.embed(ids) * math.sqrt(D) + self.pos(pos)
        h = self.encoder(h, src_key_padding_mask=ids.eq(PAD))
        return self.head(h)


def main():
    gen = torch.Generator().manual_seed(1)
    model = TokenTagger()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    for step in range(120):
        ids, labels = make_batch(32, gen)
        logits = model(ids)
        loss = F.cross_entropy(logits.reshape(-1, 2), labels.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 or step == 119:
            keep = labels != -100
            acc = (logits.argmax(-1)[keep] == labels[keep]).float().mean().item()
            print(f"step {step:3d} loss {loss.item():.4f} token-acc {acc:.3f}")


if __name__ == "__main__":
    main()
