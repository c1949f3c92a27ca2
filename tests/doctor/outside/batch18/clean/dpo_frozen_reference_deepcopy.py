"""Hand-written DPO with a frozen deep-copied reference model.

Source: https://github.com/eric-mitchell/direct-preference-optimization/issues/46

The issue asks why the DPO loss is not identically zero when policy and
reference start from the same weights.  The answer: only the policy is
updated; the reference is a separate, frozen copy evaluated under
``no_grad``.  At step 0 the log-ratio is 0 and the loss is log(2); it then
falls as the policy moves away from the reference.  Unusual parts: two copies
of the same network, one never optimised, a loss on differences of sequence
log-probabilities, and rewards that are detached for logging only.
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
    labels = labels[:, 1:].clone()
    logits = logits[:, :-1]
    loss_mask = labels != -100
    labels[~loss_mask] = 0
    per_tok = torch.gather(logits.log_softmax(-1), 2, labels.unsqueeze(-1)).squeeze(-1)
    return (per_tok * loss_mask).sum(-1)


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
    reference = copy.deepcopy(policy)
    reference.eval()
    for p in reference.parameters():
        p.requires_grad_(False)
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    for step in range(60):
        ids, labels = preference_batch(16, gen)
        n = ids.size(0) // 2
        logps = get_batch_logps(policy(input_ids=ids).logits, labels)
        with torch.no_grad():
            ref = get_batch_logps(reference(input_ids=ids).logits, labels)
        pi_ratio = logps[:n] - logps[n:]
        ref_ratio = ref[:n] - ref[n:]
        loss = -F.logsigmoid(BETA * (pi_ratio - ref_ratio)).mean()
        chosen_r = BETA * (logps[:n] - ref[:n]).detach()
        rejected_r = BETA * (logps[n:] - ref[n:]).detach()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == 59:
            print(f"step {step:3d} dpo-loss {loss.item():.4f} reward-acc {(chosen_r > rejected_r).float().mean():.2f}")


if __name__ == "__main__":
    main()
