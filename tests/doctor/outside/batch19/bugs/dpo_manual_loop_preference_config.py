"""Hand-written DPO loop on a tiny GPT-2 policy with a frozen copy as reference model.

The hyper-parameters live in a config dict, and `beta` was set to 0.0 there. The DPO logit
is beta * (policy log-ratio - reference log-ratio), so with beta = 0 the loss is exactly
log(2) = 0.6931 on every step, the rewards/margins are 0 and the gradient is identically
zero: the run completes, the optimizer steps, but the policy never moves toward the chosen
answers. The reporter saw "DPO loss remains 0.6931 and reward is stuck at 0.0" and found
beta had been set to 0.0.

Source: https://github.com/huggingface/trl/issues/1627
"""

import copy

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

DPO_CONFIG = {
    "learning_rate": 5e-4,
    "beta": 0.0,  # BUG-LINE
    "steps": 30,
    "batch_size": 8,
    "prompt_len": 4,
    "answer_len": 4,
    "vocab": 40,
}


def make_pairs(cfg, g):
    """Prompt = 4 random tokens. Chosen answer repeats the prompt, rejected is random."""
    B, P, A, V = cfg["batch_size"], cfg["prompt_len"], cfg["answer_len"], cfg["vocab"]
    prompt = torch.randint(2, V, (B, P), generator=g)
    chosen = prompt[:, :A].clone()
    rejected = torch.randint(2, V, (B, A), generator=g)
    return prompt, chosen, rejected


def sequence_logps(model, prompt, answer):
    ids = torch.cat([prompt, answer], dim=1)
    logits = model(input_ids=ids).logits[:, :-1]
    targets = ids[:, 1:]
    logp = torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    answer_mask = torch.zeros_like(targets, dtype=torch.bool)
    answer_mask[:, prompt.size(1) - 1 :] = True
    return (logp * answer_mask).sum(-1)


def dpo_loss(pol_c, pol_r, ref_c, ref_r, beta):
    logits = beta * ((pol_c - pol_r) - (ref_c - ref_r))
    loss = -F.logsigmoid(logits).mean()
    reward_margin = (beta * ((pol_c - ref_c) - (pol_r - ref_r))).mean()
    return loss, reward_margin


def main():
    cfg = DPO_CONFIG
    g = torch.Generator().manual_seed(0)
    mcfg = GPT2Config(
        vocab_size=cfg["vocab"], n_positions=16, n_embd=48, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=1
    )
    policy = GPT2LMHeadModel(mcfg)
    reference = copy.deepcopy(policy).eval()
    for p in reference.parameters():
        p.requires_grad_(False)
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg["learning_rate"])
    policy.train()
    for step in range(1, cfg["steps"] + 1):
        prompt, chosen, rejected = make_pairs(cfg, g)
        pol_c = sequence_logps(policy, prompt, chosen)
        pol_r = sequence_logps(policy, prompt, rejected)
        with torch.no_grad():
            ref_c = sequence_logps(reference, prompt, chosen)
            ref_r = sequence_logps(reference, prompt, rejected)
        loss, margin = dpo_loss(pol_c, pol_r, ref_c, ref_r, cfg["beta"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(
                f"step {step:3d}  dpo_loss {loss.item():.4f}  reward_margin {margin.item():.4f}  "
                f"logp_chosen {pol_c.mean().item():.3f}"
            )


if __name__ == "__main__":
    main()
