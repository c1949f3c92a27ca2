"""DPO fine-tuning of a tiny GPT-2 policy on synthetic preference pairs (plain PyTorch loop).

The reference model used for the DPO log-ratio is the very same module object as
the policy instead of a frozen copy taken before training. The reference
log-probabilities are therefore always equal to the policy's own (just detached),
the implicit rewards are zero at every step and the loss sits at log(2)=0.6931
forever. The gradient that is still applied has no KL anchor at all, so the policy
drifts without the regularisation DPO is supposed to provide. Nothing errors.

Source: https://github.com/YiyangZhou/POVID/issues/11
"""

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, PROMPT, RESP, N_PAIRS, BETA = 48, 5, 5, 128, 0.1

cfg = GPT2Config(
    vocab_size=V, n_positions=32, n_embd=64, n_layer=2, n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0
)
policy = GPT2LMHeadModel(cfg)

# warm start the policy with a few steps of plain LM training (the "SFT" model)
sft_opt = torch.optim.AdamW(policy.parameters(), lr=3e-3)
for _ in range(20):
    start = torch.randint(0, V, (32, 1))
    seq = (start + torch.arange(PROMPT + RESP)) % V
    loss = policy(input_ids=seq, labels=seq).loss
    sft_opt.zero_grad()
    loss.backward()
    sft_opt.step()
print(f"sft loss {loss.item():.4f}")

ref_model = policy  # BUG-LINE
ref_model.eval()


def make_pairs(n):
    prompt = torch.randint(0, V, (n, PROMPT))
    last = prompt[:, -1:]
    chosen = (last + 1 + torch.arange(RESP)) % V  # continues the counting pattern
    rejected = torch.randint(0, V, (n, RESP))  # random continuation
    return torch.cat([prompt, chosen], 1), torch.cat([prompt, rejected], 1)


def response_logps(model, ids):
    logits = model(input_ids=ids).logits[:, :-1]
    tgt = ids[:, 1:]
    lp = torch.log_softmax(logits, -1).gather(-1, tgt.unsqueeze(-1)).squeeze(-1)
    mask = torch.zeros_like(lp)
    mask[:, PROMPT - 1 :] = 1.0  # only response tokens
    return (lp * mask).sum(-1)


chosen_all, rejected_all = make_pairs(N_PAIRS)
opt = torch.optim.AdamW(policy.parameters(), lr=5e-4)
policy.train()
for step in range(30):
    idx = torch.randint(0, N_PAIRS, (16,))
    c, r = chosen_all[idx], rejected_all[idx]
    pi_c, pi_r = response_logps(policy, c), response_logps(policy, r)
    with torch.no_grad():
        ref_c, ref_r = response_logps(ref_model, c), response_logps(ref_model, r)
    logits = BETA * ((pi_c - ref_c) - (pi_r - ref_r))
    loss = -F.logsigmoid(logits).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        acc = (logits > 0).float().mean().item()
        print(f"step {step:3d} dpo loss {loss.item():.4f} reward acc {acc:.2f}")
print(f"final dpo loss {loss.item():.4f}")
