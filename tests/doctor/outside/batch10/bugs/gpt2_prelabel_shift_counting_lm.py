"""Trains a tiny GPT-2 (built from a config) with a hand-written AdamW loop on a synthetic
"counting" language: every token is the previous token plus one (mod vocabulary). The training
loop shifts the labels by hand (labels = input_ids[:, 1:]) before passing them to the model,
but GPT2LMHeadModel already shifts labels internally, so position t is trained to predict
token t+2 instead of t+1. Nothing errors (the labels tensor is padded back to full length with
-100) and the loss still goes down because t+2 is also a deterministic function of the prefix,
but the model is learning the wrong conditional: its next-token accuracy stays near chance.

Source: https://github.com/huggingface/transformers/issues/35066
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
V, T, B = 32, 16, 16
cfg = GPT2Config(vocab_size=V, n_positions=T, n_embd=64, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)


def batch(n):
    start = torch.randint(0, V, (n, 1))
    return (start + torch.arange(T)) % V


model.train()
for step in range(40):
    ids = batch(B)
    labels = torch.full_like(ids, -100)
    labels[:, :-1] = ids[:, 1:]  # BUG-LINE
    out = model(input_ids=ids, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {out.loss.item():.4f}")

model.eval()
with torch.no_grad():
    ids = batch(64)
    pred = model(input_ids=ids).logits[:, :-1].argmax(-1)
    acc = (pred == ids[:, 1:]).float().mean().item()
print(f"next-token accuracy {acc:.3f}")
