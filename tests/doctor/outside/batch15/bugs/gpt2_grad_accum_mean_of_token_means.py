"""Custom gradient-accumulation loop for a tiny GPT-2 with variable-length, prompt-masked targets.

Each micro-batch has a very different number of supervised tokens (-100 on prompt and
padding). The loop divides each micro-batch's *mean* token loss by the number of
accumulation steps, so the accumulated gradient is a mean of per-micro-batch means instead
of the mean over all supervised tokens in the effective batch. Tokens from micro-batches
with few targets are over-weighted; nothing errors and the loss still decreases.

Source: https://github.com/karpathy/nanochat/pull/59
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, T, ACC = 64, 24, 4
model = GPT2LMHeadModel(GPT2Config(vocab_size=V, n_positions=32, n_embd=48, n_layer=2, n_head=4))
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)


def micro_batch(resp_len):
    bs = 4
    ids = torch.zeros(bs, T, dtype=torch.long)
    labels = torch.full((bs, T), -100)
    for i in range(bs):
        p = int(torch.randint(3, 6, (1,)))
        prompt = torch.randint(1, V, (p,))
        resp = (prompt[-1] + torch.arange(1, resp_len + 1)) % V
        seq = torch.cat([prompt, resp])[:T]
        ids[i, : len(seq)] = seq
        labels[i, p : len(seq)] = seq[p:]
    return ids, labels


model.train()
for step in range(40):
    opt.zero_grad()
    total = 0.0
    for k in range(ACC):
        ids, labels = micro_batch(resp_len=[1, 2, 12, 16][k])
        out = model(input_ids=ids, labels=labels)
        loss = out.loss / ACC  # BUG-LINE
        loss.backward()
        total += loss.item()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {total:.4f}")
