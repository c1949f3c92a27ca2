"""Tiny GPT-2 trained with activation checkpointing, frozen embeddings and gradient accumulation.

Modelled on the use_reentrant discussion: the reentrant checkpoint variant only
builds a graph when one of the checkpointed block's *inputs* requires grad, which is
not the case when the embedding tables are frozen. Here the checkpointing is enabled
with use_reentrant=False, so the transformer blocks still get gradients although
wte/wpe are frozen on purpose (requires_grad_(False)). Unusual but intended:
parameters with no gradient, every block forward recomputed during backward, four
micro-batches per optimizer step with the loss divided by the accumulation count,
and zero_grad only after each optimizer step.

Source: https://github.com/sillsdev/silnlp/issues/387
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, T, ACCUM, MICRO = 32, 16, 4, 8
cfg = GPT2Config(
    vocab_size=V,
    n_positions=T,
    n_embd=64,
    n_layer=3,
    n_head=4,
    bos_token_id=0,
    eos_token_id=0,
    tie_word_embeddings=False,
    use_cache=False,
)
model = GPT2LMHeadModel(cfg)
model.transformer.wte.requires_grad_(False)
model.transformer.wpe.requires_grad_(False)
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
model.train()

perm = torch.randperm(V)


def micro_batch():
    s = torch.empty(MICRO, T, dtype=torch.long)
    s[:, 0] = torch.randint(0, V, (MICRO,))
    for t in range(1, T):
        s[:, t] = perm[s[:, t - 1]]
    return s


trainable = [p for p in model.parameters() if p.requires_grad]
opt = torch.optim.AdamW(trainable, lr=3e-3)
block_w = model.transformer.h[0].attn.c_attn.weight
for step in range(40):
    for _ in range(ACCUM):
        x = micro_batch()
        loss = model(input_ids=x, labels=x).loss / ACCUM
        loss.backward()
    gnorm = block_w.grad.norm().item()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if step % 5 == 0:
        print(f"step {step:3d} loss {loss.item() * ACCUM:.4f} block0 grad norm {gnorm:.4f}")
print(f"final loss {loss.item() * ACCUM:.4f}")
