"""GRU encoder-decoder (toy reversal "translation") trained with scheduled sampling.

Unusual but correct: the decoder is unrolled step by step and, at each step, the next decoder
input is either the gold previous token (teacher forcing) or the model's own greedy prediction
from the previous step, chosen per example with a probability that decays over training
(inverse-sigmoid schedule from the scheduled-sampling paper). The sampled prediction comes from
argmax, which carries no gradient, so the loss only flows through the logits, as intended.
Padding targets are excluded with ignore_index, and a greedy-decoding evaluation runs inside the
training loop under torch.no_grad() with model.eval()/model.train() switched around it.

Source: https://arxiv.org/abs/1506.03099
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, BOS, EOS = 0, 1, 2
VOCAB, MAXLEN, H, BATCH, STEPS = 10, 6, 64, 32, 150
TGT_LEN = MAXLEN + 2


def make_batch(n):
    lengths = torch.randint(2, MAXLEN + 1, (n,))
    src = torch.full((n, MAXLEN), PAD)
    tgt = torch.full((n, TGT_LEN), PAD)
    for i, L in enumerate(lengths.tolist()):
        seq = torch.randint(3, VOCAB, (L,))
        src[i, :L] = seq
        tgt[i, 0] = BOS
        tgt[i, 1 : L + 1] = seq.flip(0)
        tgt[i, L + 1] = EOS
    return src, tgt


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb = nn.Embedding(VOCAB, H, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(VOCAB, H, padding_idx=PAD)
        self.encoder = nn.GRU(H, H, batch_first=True)
        self.cell = nn.GRUCell(H, H)
        self.out = nn.Linear(H, VOCAB)

    def forward(self, src, tgt, tf_prob):
        _, h = self.encoder(self.src_emb(src))
        h = h.squeeze(0)
        inp = tgt[:, 0]
        logits = []
        for t in range(1, tgt.shape[1]):
            h = self.cell(self.tgt_emb(inp), h)
            step_logits = self.out(h)
            logits.append(step_logits)
            use_gold = torch.rand(src.shape[0]) < tf_prob
            inp = torch.where(use_gold, tgt[:, t], step_logits.argmax(-1))
        return torch.stack(logits, dim=1)


model = Seq2Seq()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
k = 30.0
for step in range(STEPS):
    tf_prob = k / (k + math.exp(step / k))
    src, tgt = make_batch(BATCH)
    logits = model(src, tgt, tf_prob)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt[:, 1:].reshape(-1), ignore_index=PAD)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if step % 30 == 0 or step == STEPS - 1:
        model.eval()
        with torch.no_grad():
            src_e, tgt_e = make_batch(128)
            pred = model(src_e, tgt_e, tf_prob=0.0).argmax(-1)
            gold = tgt_e[:, 1:]
            real = gold != PAD
            acc = (pred[real] == gold[real]).float().mean().item()
        model.train()
        print(f"step {step:3d} tf_prob {tf_prob:.2f} loss {loss.item():.4f} greedy token acc {acc:.3f}")
