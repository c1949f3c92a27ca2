"""Pairwise (Bradley-Terry) reward model on a tiny GPT-2 scoring the last non-pad token.

Unusual on purpose: GPT2ForSequenceClassification with num_labels=1 and a pad_token_id, so
the scalar reward is read from the last non-padding token of each right-padded sequence.
Each example is a (chosen, rejected) pair; both are scored in one batch and the loss is
-logsigmoid(r_chosen - r_rejected). There is no class label and no cross-entropy.

Source: https://github.com/deepspeedai/DeepSpeedExamples/issues/823
"""

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2ForSequenceClassification

torch.manual_seed(0)
torch.set_num_threads(2)

V, T, PAD = 40, 16, 0
rm = GPT2ForSequenceClassification(
    GPT2Config(
        vocab_size=V,
        n_positions=T,
        n_embd=32,
        n_layer=2,
        n_head=2,
        num_labels=1,
        pad_token_id=PAD,
        bos_token_id=PAD,
        eos_token_id=PAD,
    )
)
opt = torch.optim.AdamW(rm.parameters(), lr=2e-3)


def pair_batch(bs=16):
    chosen = torch.full((bs, T), PAD)
    rejected = torch.full((bs, T), PAD)
    for i in range(bs):
        n = int(torch.randint(5, T, (1,)))
        good = torch.randint(1, V, (n,))
        good[n - 3 :] = torch.randint(1, V // 2, (3,))
        bad = good.clone()
        bad[n - 3 :] = torch.randint(V // 2, V, (3,))
        chosen[i, :n] = good
        rejected[i, :n] = bad
    return chosen, rejected


for it in range(60):
    c, r = pair_batch()
    both = torch.cat([c, r])
    rewards = rm(input_ids=both, attention_mask=(both != PAD).long()).logits.squeeze(-1)
    rc, rr = rewards.chunk(2)
    loss = -F.logsigmoid(rc - rr).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 20 == 0:
        print(f"step {it} loss {loss.item():.4f} pair acc {(rc > rr).float().mean().item():.2f}")

with torch.no_grad():
    c, r = pair_batch(64)
    both = torch.cat([c, r])
    rc, rr = rm(input_ids=both, attention_mask=(both != PAD).long()).logits.squeeze(-1).chunk(2)
print(f"held-out pair accuracy {(rc > rr).float().mean().item():.2f}")
