"""GPT-2 fine-tuning with gradient checkpointing enabled and the KV cache disabled.

gradient_checkpointing_enable() recomputes each block's activations during
backward instead of storing them, and use_cache=False is set because a KV
cache is useless (and incompatible) while training with checkpointing.  The
forward is run twice per step by design.
Source: https://github.com/bigcode-project/starcoder/issues/112
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(config)
model.config.use_cache = False
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
ids = torch.randint(0, 100, (8, 24))

model.train()
for _step in range(6):
    out = model(input_ids=ids, labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print(f"loss {out.loss.item():.4f} checkpointing={model.is_gradient_checkpointing}")
