"""Tiny GPT-2 LM with tied input/output embeddings and the position embedding table frozen.

Unusual on purpose: (1) lm_head.weight IS transformer.wte.weight (tie_word_embeddings), so the
tied matrix appears once in parameters() and receives gradient from both the input lookup
and the output projection; (2) the learned position table wpe is frozen (requires_grad=False)
and replaced by fixed, scaled sinusoidal values, so it must not change; (3) the tied embedding is put
in a no-weight-decay group together with biases and LayerNorm parameters. The program
checks that the tie survives training and that wpe is unchanged.

Source: https://github.com/huggingface/transformers/issues/2824
"""

import math

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, T, D = 64, 20, 48
model = GPT2LMHeadModel(
    GPT2Config(
        vocab_size=V,
        n_positions=T,
        n_embd=D,
        n_layer=2,
        n_head=4,
        tie_word_embeddings=True,
        bos_token_id=0,
        eos_token_id=0,
    )
)
assert model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()

pos = torch.arange(T).unsqueeze(1)
div = torch.exp(torch.arange(0, D, 2) * (-math.log(10000.0) / D))
with torch.no_grad():
    model.transformer.wpe.weight[:, 0::2] = 0.1 * torch.sin(pos * div)
    model.transformer.wpe.weight[:, 1::2] = 0.1 * torch.cos(pos * div)
model.transformer.wpe.weight.requires_grad_(False)
wpe_before = model.transformer.wpe.weight.detach().clone()

decay, no_decay = [], []
for n, p in model.named_parameters():
    if not p.requires_grad:
        continue
    (no_decay if p.ndim < 2 or "wte" in n else decay).append(p)
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=6e-3)
print(f"decay tensors {len(decay)}, no-decay tensors {len(no_decay)}")

model.train()
for it in range(90):
    start = torch.randint(0, V, (16, 1))
    ids = (start + 2 * torch.arange(T)) % V
    loss = model(input_ids=ids, labels=ids).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 20 == 0:
        print(f"step {it} loss {loss.item():.4f}")

assert model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()
assert torch.equal(model.transformer.wpe.weight, wpe_before)
print("embeddings still tied; position table unchanged")
