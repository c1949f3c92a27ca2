"""Fine-tuning a tiny GPT-2 policy on new data with a KL penalty to a frozen reference copy.

Unusual on purpose: a deep copy of the starting model is kept as a reference in eval mode
with requires_grad=False and is only run under torch.no_grad(). The policy loss is
next-token cross-entropy on the new task plus beta * KL(policy || reference) on a batch of
the *old* data, so the policy learns the new pattern while staying close to the reference
on the old one. Two forward passes per step, one backward.

Source: https://github.com/huggingface/trl/issues/288
"""

import copy

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, T = 40, 14
policy = GPT2LMHeadModel(
    GPT2Config(vocab_size=V, n_positions=T, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
)


def seqs(step, bs=16):
    start = torch.randint(0, V, (bs, 1))
    return (start + step * torch.arange(T)) % V


opt = torch.optim.AdamW(policy.parameters(), lr=3e-3)
for it in range(30):
    ids = seqs(1)
    loss = policy(input_ids=ids, labels=ids).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"reference pretraining loss {loss.item():.4f}")

ref = copy.deepcopy(policy).eval()
for p in ref.parameters():
    p.requires_grad_(False)

beta = 0.5
opt = torch.optim.AdamW(policy.parameters(), lr=2e-3)
policy.train()
for it in range(40):
    new = seqs(2)
    old = seqs(1)
    sft = policy(input_ids=new, labels=new).loss
    logp = F.log_softmax(policy(input_ids=old).logits, -1)
    with torch.no_grad():
        logq = F.log_softmax(ref(input_ids=old).logits, -1)
    kl = (logp.exp() * (logp - logq)).sum(-1).mean()
    loss = sft + beta * kl
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 10 == 0:
        print(f"step {it} sft {sft.item():.4f} kl {kl.item():.4f}")
