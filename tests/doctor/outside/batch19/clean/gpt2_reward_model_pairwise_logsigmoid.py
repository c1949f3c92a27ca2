"""Reward model on a tiny GPT-2 (GPT2ForSequenceClassification, num_labels=1) with a pairwise loss.

Unusual but correct: the classifier has a single output used as a scalar reward; chosen and
rejected answers are scored in one concatenated batch and the Bradley-Terry loss
-logsigmoid(r_chosen - r_rejected) is minimised. The reward is read at the last non-pad
token (pad_token_id is set in the config), and accuracy = P(r_chosen > r_rejected).

Source: https://github.com/huggingface/trl/issues/653
"""

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2ForSequenceClassification

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, VOCAB = 0, 40


def pairs(g, n=12):
    """Chosen answers end with 'good' tokens (30..39), rejected with 'bad' ones (5..14)."""
    prompt = torch.randint(5, VOCAB, (n, 5), generator=g)
    chosen = torch.cat([prompt, torch.randint(30, 40, (n, 3), generator=g)], 1)
    rejected = torch.cat(
        [prompt, torch.randint(5, 15, (n, 3), generator=g), torch.full((n, 1), PAD)], 1
    )  # one pad on the shorter side
    chosen = torch.cat([chosen, torch.full((n, 1), PAD)], 1)
    chosen[:, -1] = torch.randint(30, 40, (n,), generator=g)
    return chosen, rejected


def main():
    g = torch.Generator().manual_seed(0)
    cfg = GPT2Config(
        vocab_size=VOCAB,
        n_positions=16,
        n_embd=48,
        n_layer=2,
        n_head=4,
        num_labels=1,
        pad_token_id=PAD,
        bos_token_id=PAD,
        eos_token_id=PAD,
    )
    rm = GPT2ForSequenceClassification(cfg)
    opt = torch.optim.AdamW(rm.parameters(), lr=1e-3)
    rm.train()
    for step in range(1, 41):
        chosen, rejected = pairs(g)
        ids = torch.cat([chosen, rejected], 0)
        rewards = rm(input_ids=ids, attention_mask=(ids != PAD).long()).logits.squeeze(-1)
        r_c, r_r = rewards.chunk(2)
        loss = -F.logsigmoid(r_c - r_r).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}  acc {(r_c > r_r).float().mean():.2f}")


if __name__ == "__main__":
    main()
