"""Pairwise reward model on a GPT-2 backbone that reads the score at the last real token.

Source: https://github.com/vwxyzjn/lm-human-preference-details/issues/6

The issue discusses why a reward head that takes ``reward[:, -1]`` needs the
batch in a particular padding layout.  This program does it the robust way:
batches are right-padded, and the scalar reward is gathered at each row's last
non-padding position (``attention_mask.sum(-1) - 1``), so the reward head sees
the end of the response regardless of sequence length.  Unusual parts: a
Bradley-Terry loss on pairs of sequences and a per-row gather instead of a
fixed pooling position.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import GPT2Config, GPT2Model

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, GOOD_END, BAD_END, VOCAB, WIDTH = 0, 3, 4, 40, 16


def sample_pair(gen):
    n = int(torch.randint(5, WIDTH, (1,), generator=gen))
    body = torch.randint(5, VOCAB, (n - 1,), generator=gen).tolist()
    return body + [GOOD_END], body + [BAD_END]


def right_pad(seqs):
    ids = torch.full((len(seqs), WIDTH), PAD)
    mask = torch.zeros_like(ids)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = 1
    return ids, mask


class RewardModel(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = GPT2Config(
            vocab_size=VOCAB,
            n_positions=32,
            n_embd=64,
            n_layer=2,
            n_head=4,
            bos_token_id=1,
            eos_token_id=1,
            pad_token_id=PAD,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
        )
        self.backbone = GPT2Model(cfg)
        self.v_head = nn.Linear(cfg.n_embd, 1)

    def forward(self, ids, mask):
        h = self.backbone(input_ids=ids, attention_mask=mask).last_hidden_state
        scores = self.v_head(h).squeeze(-1)
        last = mask.sum(-1) - 1
        return scores.gather(1, last.unsqueeze(1)).squeeze(1)


def main():
    gen = torch.Generator().manual_seed(0)
    model = RewardModel()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(60):
        pairs = [sample_pair(gen) for _ in range(8)]
        c_ids, c_mask = right_pad([p[0] for p in pairs])
        r_ids, r_mask = right_pad([p[1] for p in pairs])
        rc, rr = model(c_ids, c_mask), model(r_ids, r_mask)
        loss = -F.logsigmoid(rc - rr).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == 59:
            print(f"step {step:3d} loss {loss.item():.4f} pair-acc {(rc > rr).float().mean().item():.2f}")


if __name__ == "__main__":
    main()
