"""Pre-trains a tiny BERT masked language model (built from a config) with a hand-written loop on
a synthetic corpus. 15% of the positions are replaced by [MASK], but the labels are a plain copy
of the original ids: unmasked positions are not set to -100, so the cross-entropy is averaged
over every token. About 85% of the loss is the trivial "copy the visible input token" task, which
the model learns within a few steps; the gradient signal for the masked positions -- the only
thing MLM pre-training is for -- is diluted several-fold. No error or warning: BertForMaskedLM
computes the loss on whatever labels it is given.

Source: https://github.com/huggingface/transformers/issues/13020
"""

import torch
from transformers import BertConfig, BertForMaskedLM

torch.manual_seed(0)
V, T, B = 40, 16, 32
PAD, MASK = 0, 1
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
    # tokens follow a simple pattern (x, x+1, x+2, ...) so masked tokens are predictable
    start = torch.randint(2, V, (n, 1))
    return 2 + (start - 2 + torch.arange(T)) % (V - 2)


model.train()
for step in range(30):
    ids = batch(B)
    masked = torch.rand(ids.shape) < 0.15
    inputs = ids.masked_fill(masked, MASK)
    labels = ids.clone()  # BUG-LINE
    out = model(input_ids=inputs, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {out.loss.item():.4f}")

model.eval()
with torch.no_grad():
    ids = batch(128)
    masked = torch.rand(ids.shape) < 0.15
    logits = model(input_ids=ids.masked_fill(masked, MASK)).logits
    acc = (logits.argmax(-1)[masked] == ids[masked]).float().mean().item()
print(f"accuracy on masked positions {acc:.3f}")
