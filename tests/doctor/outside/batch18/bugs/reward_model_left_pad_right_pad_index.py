"""Pairwise reward model on a GPT-2 backbone: left-padded batches, right-padding index.

Source: https://github.com/huggingface/trl/issues/2778

The collator pads on the left (the setting was copied from the PPO generation
script), but the reward head picks the score at ``attention_mask.sum(-1) - 1``,
the formula for the last real token under RIGHT padding.  With left padding
that index lands in the padding region or in the middle of the text, so the
scalar reward never looks at the end of the response, which is where the
preference signal lives.  Training runs, the loss wobbles around log(2) and the
pairwise accuracy stays near chance.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import GPT2Config, GPT2Model

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, GOOD_END, BAD_END, VOCAB, WIDTH = 0, 3, 4, 40, 16
COLLATE = {"padding_side": "left", "max_len": WIDTH}


def sample_pair(gen):
    n = int(torch.randint(5, WIDTH, (1,), generator=gen))
    body = torch.randint(5, VOCAB, (n - 1,), generator=gen).tolist()
    return body + [GOOD_END], body + [BAD_END]


def pad_batch(seqs, cfg):
    ids = torch.full((len(seqs), cfg["max_len"]), PAD)
    mask = torch.zeros_like(ids)
    for i, s in enumerate(seqs):
        if cfg["padding_side"] == "left":
            ids[i, -len(s) :] = torch.tensor(s)
            mask[i, -len(s) :] = 1
        else:
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
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        h = self.backbone(input_ids=ids, attention_mask=mask, position_ids=pos).last_hidden_state
        scores = self.v_head(h).squeeze(-1)
        last = mask.sum(-1) - 1  # BUG-LINE
        return scores.gather(1, last.unsqueeze(1)).squeeze(1)


def main():
    gen = torch.Generator().manual_seed(0)
    model = RewardModel()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(60):
        pairs = [sample_pair(gen) for _ in range(8)]
        c_ids, c_mask = pad_batch([p[0] for p in pairs], COLLATE)
        r_ids, r_mask = pad_batch([p[1] for p in pairs], COLLATE)
        rc, rr = model(c_ids, c_mask), model(r_ids, r_mask)
        loss = -F.logsigmoid(rc - rr).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == 59:
            acc = (rc > rr).float().mean().item()
            print(f"step {step:3d} loss {loss.item():.4f} pair-acc {acc:.2f}")


if __name__ == "__main__":
    main()
