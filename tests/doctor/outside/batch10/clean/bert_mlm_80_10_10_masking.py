"""Pre-trains a tiny BERT masked language model (built from a config) with a hand-written loop and
the original BERT corruption recipe done by hand: 15% of the non-special positions are selected
for prediction; of those, 80% become [MASK], 10% become a random token and 10% are left unchanged.
Only the selected positions carry labels; everything else is -100, so the loss is computed on the
selected positions only (including the ones whose input token was not changed). Padding and [CLS]
are never selected. Unusual-looking but correct: labels differ from inputs at unmasked places,
and some inputs are deliberately corrupted with random tokens.

Source: https://arxiv.org/abs/1810.04805
"""

import torch
from transformers import BertConfig, BertForMaskedLM

torch.manual_seed(0)
V, T, B = 40, 16, 32
PAD, CLS, MASK = 0, 1, 2
FIRST = 3
cfg = BertConfig(
    vocab_size=V,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_position_embeddings=T,
    pad_token_id=PAD,
)
model = BertForMaskedLM(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)


def batch(n):
    start = torch.randint(FIRST, V, (n, 1))
    ids = FIRST + (start - FIRST + torch.arange(T)) % (V - FIRST)
    ids[:, 0] = CLS
    lengths = torch.randint(T // 2, T + 1, (n, 1))
    ids = ids.masked_fill(torch.arange(T) >= lengths, PAD)
    return ids


def corrupt(ids):
    special = (ids == PAD) | (ids == CLS)
    prob = torch.full(ids.shape, 0.15).masked_fill(special, 0.0)
    selected = torch.bernoulli(prob).bool()
    labels = ids.masked_fill(~selected, -100)
    inputs = ids.clone()
    to_mask = torch.bernoulli(torch.full(ids.shape, 0.8)).bool() & selected
    inputs[to_mask] = MASK
    to_random = torch.bernoulli(torch.full(ids.shape, 0.5)).bool() & selected & ~to_mask
    inputs[to_random] = torch.randint(FIRST, V, ids.shape)[to_random]
    # the remaining selected positions keep their original token but still carry a label
    return inputs, labels, (ids != PAD).long()


model.train()
for step in range(30):
    inputs, labels, attn = corrupt(batch(B))
    out = model(input_ids=inputs, attention_mask=attn, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {out.loss.item():.4f}")
print(f"final loss {out.loss.item():.4f}")
