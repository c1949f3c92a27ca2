"""DPO on a tiny GPT-2 with a frozen reference copy (plain PyTorch loop).

Correct usage modelled on the discussion of why the DPO loss is log(2) only at the
first step: the reference model is a deep copy of the SFT policy taken *before*
preference training, with requires_grad_(False) and eval(); its log-probabilities
are computed under torch.no_grad(). Unusual points that are all intended: a whole
second model whose parameters never receive gradients, the initial loss is exactly
log(2) because policy == reference at step 0, and the chosen/rejected sequences are
passed through the policy in one concatenated batch.

Source: https://github.com/huggingface/trl/issues/892
"""

import copy

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, PROMPT, RESP, BETA = 40, 5, 5, 0.2

cfg = GPT2Config(
    vocab_size=V,
    n_positions=16,
    n_embd=64,
    n_layer=2,
    n_head=4,
    resid_pdrop=0.0,
    embd_pdrop=0.0,
    attn_pdrop=0.0,
    bos_token_id=0,
    eos_token_id=0,
)
policy = GPT2LMHeadModel(cfg)

sft_opt = torch.optim.AdamW(policy.parameters(), lr=3e-3)
for _ in range(10):
    seq = torch.randint(0, V, (32, PROMPT + RESP))
    loss = policy(input_ids=seq, labels=seq).loss
    sft_opt.zero_grad()
    loss.backward()
    sft_opt.step()

reference = copy.deepcopy(policy).requires_grad_(False).eval()


def make_pairs(n):
    prompt = torch.randint(0, V, (n, PROMPT))
    chosen = (prompt[:, -1:] + 1 + torch.arange(RESP)) % V
    rejected = (prompt[:, -1:] - 1 - torch.arange(RESP)) % V
    return torch.cat([prompt, chosen], 1), torch.cat([prompt, rejected], 1)


def seq_logps(model, ids):
    logits = model(input_ids=ids).logits[:, :-1]
    lp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return lp[:, PROMPT - 1 :].sum(-1)


opt = torch.optim.AdamW(policy.parameters(), lr=2e-3)
policy.train()
for step in range(30):
    c, r = make_pairs(12)
    both = torch.cat([c, r], 0)
    pi = seq_logps(policy, both)
    with torch.no_grad():
        ref = seq_logps(reference, both)
    pi_c, pi_r = pi.chunk(2)
    ref_c, ref_r = ref.chunk(2)
    margin = BETA * ((pi_c - ref_c) - (pi_r - ref_r))
    loss = -F.logsigmoid(margin).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f"step {step:3d} dpo loss {loss.item():.4f} reward acc {(margin > 0).float().mean().item():.2f}")
print(f"final dpo loss {loss.item():.4f}")
