"""Hand-written DPO on a tiny GPT-2 after a short SFT phase, with a separately loaded frozen reference.

Unusual but correct: after SFT the policy is saved and the reference model is loaded from
that checkpoint as an independent model (no shared parameters), put in eval mode with
requires_grad False, and its log-probs are computed under no_grad. Only answer tokens are
scored, beta = 0.5, and the loss -logsigmoid(beta * (policy ratio - reference ratio)) falls
below log(2) as the policy learns to prefer the chosen answers.

Source: https://github.com/stanleylsx/llms_tool/issues/46
"""

import tempfile

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, P, A = 40, 4, 4
BETA = 0.5


def make_pairs(g, n=8):
    prompt = torch.randint(2, VOCAB, (n, P), generator=g)
    chosen = prompt.flip(1)  # preferred: reversed prompt
    rejected = torch.randint(2, VOCAB, (n, A), generator=g)
    return prompt, chosen, rejected


def answer_logps(model, prompt, answer):
    ids = torch.cat([prompt, answer], 1)
    logp = torch.log_softmax(model(input_ids=ids).logits[:, :-1], -1)
    tok = logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return tok[:, P - 1 :].sum(-1)


def main():
    g = torch.Generator().manual_seed(0)
    cfg = GPT2Config(vocab_size=VOCAB, n_positions=16, n_embd=48, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=1)
    policy = GPT2LMHeadModel(cfg)
    sft = torch.optim.AdamW(policy.parameters(), lr=3e-3)
    for _ in range(15):  # short SFT on random (prompt, random answer) text
        ids = torch.randint(2, VOCAB, (16, P + A), generator=g)
        loss = policy(input_ids=ids, labels=ids).loss
        sft.zero_grad()
        loss.backward()
        sft.step()
    path = tempfile.mkdtemp()
    policy.save_pretrained(path)
    reference = GPT2LMHeadModel.from_pretrained(path).eval()
    reference.requires_grad_(False)

    opt = torch.optim.AdamW(policy.parameters(), lr=3e-3)
    policy.train()
    for step in range(1, 31):
        prompt, chosen, rejected = make_pairs(g)
        pc, pr = answer_logps(policy, prompt, chosen), answer_logps(policy, prompt, rejected)
        with torch.no_grad():
            rc, rr = answer_logps(reference, prompt, chosen), answer_logps(reference, prompt, rejected)
        loss = -F.logsigmoid(BETA * ((pc - pr) - (rc - rr))).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step:3d}  dpo loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
