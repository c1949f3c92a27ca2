"""Hand-written DPO on a tiny GPT-2 where sequence log-probs are gathered without the causal shift.

Source: https://github.com/eric-mitchell/direct-preference-optimization/issues/61

``get_batch_logps`` scores ``labels[:, t]`` with ``logits[:, t]``.  For a causal
LM ``logits[:, t]`` is the prediction for token ``t+1``, so labels must be
shifted (``labels[:, 1:]`` vs ``logits[:, :-1]``).  Without the shift the
"log-probability" of a response is the model's score for copying the token it
is currently reading, which a causal model can trivially inflate.  DPO loss and
reward accuracy look great while the policy's real next-token distribution is
not pushed towards the chosen responses.
"""

import copy

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, PROMPT_LEN, RESP_LEN, BETA = 40, 4, 6, 0.1
GOOD = torch.arange(10, 20)
BAD = torch.arange(20, 30)


def preference_batch(bs, gen):
    prompt = torch.randint(30, VOCAB, (bs, PROMPT_LEN), generator=gen)
    chosen = GOOD[torch.randint(0, 10, (bs, RESP_LEN), generator=gen)]
    rejected = BAD[torch.randint(0, 10, (bs, RESP_LEN), generator=gen)]
    ids = torch.cat([torch.cat([prompt, chosen], 1), torch.cat([prompt, rejected], 1)], 0)
    labels = ids.clone()
    labels[:, :PROMPT_LEN] = -100
    return ids, labels


def get_batch_logps(logits, labels):
    loss_mask = labels != -100
    safe = labels.clamp(min=0)
    per_tok = torch.gather(logits.log_softmax(-1), 2, safe.unsqueeze(-1)).squeeze(-1)  # BUG-LINE
    return (per_tok * loss_mask).sum(-1)


def dpo_loss(pc, pr, rc, rr, beta):
    logits = (pc - pr) - (rc - rr)
    return -F.logsigmoid(beta * logits).mean(), beta * (pc - rc).detach(), beta * (pr - rr).detach()


def main():
    cfg = GPT2Config(
        vocab_size=VOCAB,
        n_positions=16,
        n_embd=64,
        n_layer=2,
        n_head=4,
        bos_token_id=0,
        eos_token_id=0,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    policy = GPT2LMHeadModel(cfg)
    reference = copy.deepcopy(policy).eval().requires_grad_(False)
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    for step in range(60):
        ids, labels = preference_batch(16, gen)
        logps = get_batch_logps(policy(input_ids=ids).logits, labels)
        with torch.no_grad():
            ref_logps = get_batch_logps(reference(input_ids=ids).logits, labels)
        n = ids.size(0) // 2
        loss, r_c, r_r = dpo_loss(logps[:n], logps[n:], ref_logps[:n], ref_logps[n:], BETA)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == 59:
            acc = (r_c > r_r).float().mean().item()
            print(f"step {step:3d} dpo-loss {loss.item():.4f} reward-acc {acc:.2f} margin {(r_c - r_r).mean():.3f}")


if __name__ == "__main__":
    main()
