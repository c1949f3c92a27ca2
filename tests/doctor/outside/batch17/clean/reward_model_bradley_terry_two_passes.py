"""Bradley-Terry reward model: tiny GPT-2 with a scalar head trained on preference pairs.

Modelled on the question of log-sigmoid versus cross-entropy losses for reward
modelling: the loss is -logsigmoid(r_chosen - r_rejected), i.e. a pairwise loss that
only constrains reward *differences*, plus a small centring penalty on (r_c + r_r)^2
that pins the otherwise free offset (as TRL's center_rewards_coefficient does).
Unusual but intended: the model is called twice per step (chosen and rejected
batches separately) and both outputs enter one loss; there are no class labels at
all; the scalar head reads the last non-pad token of right-padded sequences.

Source: https://github.com/huggingface/trl/issues/1167
"""

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2ForSequenceClassification

torch.manual_seed(0)
torch.set_num_threads(2)

V, PAD, PROMPT, MAXRESP = 36, 0, 4, 6
cfg = GPT2Config(
    vocab_size=V,
    n_positions=16,
    n_embd=64,
    n_layer=2,
    n_head=4,
    num_labels=1,
    pad_token_id=PAD,
    bos_token_id=PAD,
    eos_token_id=PAD,
    resid_pdrop=0.0,
    embd_pdrop=0.0,
    attn_pdrop=0.0,
)
rm = GPT2ForSequenceClassification(cfg)
GOOD = torch.arange(1, V // 2)  # "helpful" tokens


def pad_batch(seqs):
    L = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), L), PAD)
    mask = torch.zeros(len(seqs), L, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = s
        mask[i, : len(s)] = 1
    return ids, mask


def pairs(n):
    chosen, rejected = [], []
    for _ in range(n):
        prompt = torch.randint(1, V, (PROMPT,))
        lc, lr = torch.randint(2, MAXRESP + 1, (2,)).tolist()
        good = GOOD[torch.randint(0, len(GOOD), (lc,))]
        bad = torch.randint(V // 2, V, (lr,))
        chosen.append(torch.cat([prompt, good]))
        rejected.append(torch.cat([prompt, bad]))
    return pad_batch(chosen), pad_batch(rejected)


opt = torch.optim.AdamW(rm.parameters(), lr=1e-3)
for step in range(80):
    (c_ids, c_mask), (r_ids, r_mask) = pairs(16)
    r_c = rm(input_ids=c_ids, attention_mask=c_mask).logits.squeeze(-1)
    r_r = rm(input_ids=r_ids, attention_mask=r_mask).logits.squeeze(-1)
    loss = -F.logsigmoid(r_c - r_r).mean() + 0.01 * ((r_c + r_r) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        acc = (r_c > r_r).float().mean().item()
        print(
            f"step {step:3d} loss {loss.item():.4f} pair acc {acc:.2f} "
            f"mean chosen {r_c.mean().item():+.3f} mean rejected {r_r.mean().item():+.3f}"
        )
print(f"final loss {loss.item():.4f}")
