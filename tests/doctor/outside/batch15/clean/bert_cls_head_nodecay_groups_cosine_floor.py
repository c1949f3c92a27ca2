"""Bidirectional tiny BERT classifier reading the first ([CLS]) token, with no-decay parameter
groups and a warmup + cosine schedule that decays to a nonzero floor.

Unusual on purpose: (1) the encoder is deliberately bidirectional (no causal mask) because the
label depends on a token anywhere in the sequence, and the classification head reads only
position 0; (2) padding is masked with attention_mask; (3) biases and LayerNorm weights go to
a weight_decay=0 group; (4) the learning rate warms up linearly then follows a cosine down to
10% of the peak (get_cosine_with_min_lr_schedule_with_warmup), not to zero.

Source: https://github.com/huggingface/transformers/issues/492
"""

import torch
import torch.nn.functional as F
from transformers import BertConfig, BertModel, get_cosine_with_min_lr_schedule_with_warmup

torch.manual_seed(0)
torch.set_num_threads(2)

V, T, CLS, PAD, KEY = 60, 20, 1, 0, 5
enc = BertModel(
    BertConfig(
        vocab_size=V,
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=96,
        max_position_embeddings=T,
        pad_token_id=PAD,
    ),
    add_pooling_layer=False,
)
head = torch.nn.Linear(48, 2)

no_decay_keys = ("bias", "LayerNorm.weight")
named = list(enc.named_parameters()) + [("head." + n, p) for n, p in head.named_parameters()]
groups = [
    {"params": [p for n, p in named if not any(k in n for k in no_decay_keys)], "weight_decay": 0.01},
    {"params": [p for n, p in named if any(k in n for k in no_decay_keys)], "weight_decay": 0.0},
]
opt = torch.optim.AdamW(groups, lr=2e-3)
STEPS = 80
sched = get_cosine_with_min_lr_schedule_with_warmup(opt, num_warmup_steps=8, num_training_steps=STEPS, min_lr_rate=0.1)


def batch(bs=16):
    ids = torch.full((bs, T), PAD)
    mask = torch.zeros(bs, T, dtype=torch.long)
    y = torch.randint(0, 2, (bs,))
    for i in range(bs):
        n = int(torch.randint(6, T, (1,)))
        toks = torch.randint(6, V, (n - 1,))
        if y[i] == 1:
            toks[int(torch.randint(0, n - 1, (1,)))] = KEY
        ids[i, 0] = CLS
        ids[i, 1:n] = toks
        mask[i, :n] = 1
    return ids, mask, y


for it in range(STEPS):
    ids, mask, y = batch()
    h = enc(input_ids=ids, attention_mask=mask).last_hidden_state
    loss = F.cross_entropy(head(h[:, 0]), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    if it % 20 == 0 or it == STEPS - 1:
        acc = (head(h[:, 0]).argmax(-1) == y).float().mean().item()
        print(f"step {it} loss {loss.item():.4f} acc {acc:.2f} lr {sched.get_last_lr()[0]:.2e}")
