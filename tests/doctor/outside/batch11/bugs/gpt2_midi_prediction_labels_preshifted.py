"""Trains a tiny GPT-2 on symbolic music (MIDI-like pitch-event sequences following arpeggio patterns) in a
hand-written loop. The loop prepares next-token targets itself: inputs are events[:, :-1] and labels events[:, 1:],
and then passes them as `labels` to GPT2LMHeadModel, which shifts labels internally once more. The effective target
for position t is therefore the event at t+2: the model is trained to predict two steps ahead. No error (shapes
match) and the loss still decreases because the sequences are partly predictable two steps ahead.

Source: https://github.com/huggingface/transformers/issues/32944
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
V = 48
g = torch.Generator().manual_seed(0)


def batch(n):
    root = torch.randint(0, 24, (n, 1), generator=g)
    chord = torch.tensor([0, 4, 7, 12, 7, 4])
    steps = torch.arange(25) % 6
    shift = (torch.arange(25) // 6) * int(torch.randint(1, 3, (1,), generator=g))
    return (root + chord[steps] + shift) % V


model = GPT2LMHeadModel(
    GPT2Config(vocab_size=V, n_positions=32, n_embd=64, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
model.train()
for step in range(40):
    ev = batch(32)
    inp, lab = ev[:, :-1], ev[:, 1:]
    out = model(input_ids=inp, labels=lab)  # BUG-LINE
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(step, round(out.loss.item(), 4))
model.eval()
with torch.no_grad():
    ev = batch(64)
    pred = model(input_ids=ev[:, :-1]).logits.argmax(-1)
    print("next-event accuracy:", float((pred == ev[:, 1:]).float().mean()))
