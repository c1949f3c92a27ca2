"""Trains a tiny T5 (built from a config) to reverse short digit sequences with a hand-written
loop. The batch passes decoder_input_ids equal to the target ids *and* labels equal to the same
target ids. When decoder_input_ids are given, T5ForConditionalGeneration does not shift the labels
right, so the decoder sees the very token it must predict at every position (teacher forcing with
no offset). The loss collapses to ~0 within a few steps because the task degenerates to copying
the decoder input; the encoder is effectively ignored, and greedy generation is garbage. Nothing
raises or warns.

Source: https://github.com/abhimishra91/transformers-tutorials/issues/15
"""

import torch
from transformers import T5Config, T5ForConditionalGeneration

torch.manual_seed(0)
PAD, EOS = 0, 1
V, L, B = 14, 6, 24
cfg = T5Config(
    vocab_size=V,
    d_model=64,
    d_kv=16,
    d_ff=128,
    num_layers=2,
    num_decoder_layers=2,
    num_heads=4,
    pad_token_id=PAD,
    eos_token_id=EOS,
    decoder_start_token_id=PAD,
    dropout_rate=0.0,
)
model = T5ForConditionalGeneration(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)


def batch(n):
    src = torch.randint(2, V, (n, L))
    tgt = torch.cat([src.flip(1), torch.full((n, 1), EOS)], dim=1)
    return src, tgt


model.train()
for step in range(40):
    src, tgt = batch(B)
    out = model(input_ids=src, decoder_input_ids=tgt, labels=tgt)  # BUG-LINE
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {out.loss.item():.4f}")

model.eval()
with torch.no_grad():
    src, tgt = batch(64)
    # teacher-forced accuracy with properly shifted decoder inputs
    logits = model(input_ids=src, labels=tgt).logits
    acc = (logits.argmax(-1) == tgt).float().mean().item()
print(f"final train loss {out.loss.item():.4f}  shifted teacher-forced accuracy {acc:.3f}")
