"""Causal LM fine-tuning with labels prepared as the next token before calling GPT2LMHeadModel.

The batch builder aligns the labels to the *next* token (labels[t] = input_ids[t+1]) and
passes them to GPT2LMHeadModel, which shifts labels internally again. The loss is therefore
the loss of predicting the token two positions ahead. Training runs and the loss still falls
(the synthetic sequences are arithmetic, so t+2 is also predictable), but the model learns
the wrong objective: its next-token accuracy stays poor.

Source: https://github.com/huggingface/transformers/issues/5886
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, T, B = 64, 24, 16
cfg = GPT2Config(
    vocab_size=V, n_positions=32, n_embd=48, n_layer=2, n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0
)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)


def make_batch():
    start = torch.randint(0, V, (B, 1))
    step = torch.randint(1, 4, (B, 1))
    return (start + step * torch.arange(T)) % V


def build_labels(ids):
    labels = torch.full_like(ids, -100)
    labels[:, :-1] = ids[:, 1:]  # BUG-LINE
    return labels


model.train()
for it in range(150):
    ids = make_batch()
    out = model(input_ids=ids, labels=build_labels(ids))
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if it % 30 == 0:
        print(f"step {it} loss {out.loss.item():.4f}")

model.eval()
with torch.no_grad():
    ids = make_batch()
    pred = model(input_ids=ids).logits.argmax(-1)
    acc = (pred[:, 2:-1] == ids[:, 3:]).float().mean().item()
print(f"next-token accuracy {acc:.3f}")
