"""GRU encoder-decoder with additive attention, trained with scheduled sampling.

Unusual but correct: at every decoder step the next input is the ground-truth
previous token with probability p (teacher forcing) and the model's own argmax
prediction otherwise (free running); p decays linearly over training. The fed
back prediction is an integer argmax, so no gradient flows through the choice,
which is intended. Gradients are clipped element-wise with clip_grad_value_.
Scheduled sampling for seq2seq models as described in this write-up of Bengio
et al. 2015.

Source: https://824zzy.github.io/2019/05/10/schedule-sampling
"""

import random

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
random.seed(0)
torch.set_num_threads(2)

V, BOS, HID, L = 10, 0, 32, 5  # task: output the input sequence reversed


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 32)
        self.enc = nn.GRU(32, HID, batch_first=True)
        self.dec = nn.GRUCell(32 + HID, HID)
        self.att_q = nn.Linear(HID, HID)
        self.att_v = nn.Linear(HID, 1)
        self.out = nn.Linear(2 * HID, V)

    def forward(self, src, tgt, tf_prob):
        enc_out, h = self.enc(self.emb(src))
        h = h[0]
        inp = torch.full((src.shape[0],), BOS, dtype=torch.long)
        logits = []
        for t in range(tgt.shape[1]):
            score = self.att_v(torch.tanh(enc_out + self.att_q(h)[:, None])).squeeze(-1)
            ctx = (F.softmax(score, dim=1)[..., None] * enc_out).sum(1)
            h = self.dec(torch.cat([self.emb(inp), ctx], -1), h)
            step_logits = self.out(torch.cat([h, ctx], -1))
            logits.append(step_logits)
            if random.random() < tf_prob:
                inp = tgt[:, t]
            else:
                inp = step_logits.argmax(-1)
        return torch.stack(logits, 1)


model = Seq2Seq()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
STEPS = 80
for step in range(STEPS):
    src = torch.randint(1, V, (32, L))
    tgt = src.flip(1)
    tf_prob = max(0.2, 1.0 - step / (0.8 * STEPS))
    logits = model(src, tgt, tf_prob)
    loss = F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_value_(model.parameters(), 1.0)
    opt.step()
    if step % 20 == 0 or step == STEPS - 1:
        print(f"step {step:3d} tf_prob {tf_prob:.2f} ce {loss.item():.4f}")

with torch.no_grad():
    src = torch.randint(1, V, (64, L))
    pred = model(src, src.flip(1), 0.0).argmax(-1)
    print("free-running token accuracy", (pred == src.flip(1)).float().mean().item())
