"""Causal-LM batches padded with the EOS token, labels masked by attention_mask.

GPT-2 has no pad token, so EOS is reused for padding.  Labels are built by
setting -100 only where attention_mask == 0 (true padding), not where
input_ids == eos, so the real end-of-text token of every example still gets a
loss and the model learns to stop.
Source: https://github.com/huggingface/trl/issues/976
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
EOS = 0
config = GPT2Config(
    n_layer=2, n_embd=32, n_head=2, vocab_size=60, n_positions=32, bos_token_id=EOS, eos_token_id=EOS, pad_token_id=EOS
)
model = GPT2LMHeadModel(config)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

seqs = [[*torch.randint(1, 60, (int(n),)).tolist(), EOS] for n in torch.randint(3, 12, (8,))]
width = max(len(s) for s in seqs)
input_ids = torch.tensor([s + [EOS] * (width - len(s)) for s in seqs])
attention_mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
labels = input_ids.masked_fill(attention_mask == 0, -100)

model.train()
for _step in range(6):
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print(f"loss {out.loss.item():.4f} eos targets kept {(labels == EOS).sum().item()}")
