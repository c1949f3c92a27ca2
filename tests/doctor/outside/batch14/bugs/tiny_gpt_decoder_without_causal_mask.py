"""Tiny GPT-style next-token language model on a synthetic Markov-chain corpus.

The corpus is sampled from a random first-order Markov chain, so the best achievable
next-token loss is the chain's entropy (well above zero). Bug: the stack of self-attention
blocks is called without the causal (subsequent-position) mask, so every position can attend
to the token it is supposed to predict. Training loss collapses towards zero within a few
dozen steps, which looks like great learning, but the model has only learned to copy from the
future and is useless for left-to-right generation. Fix: pass
`mask=nn.Transformer.generate_square_subsequent_mask(T)` (and `is_causal=True`).

Source: https://github.com/alex-matton/causal-transformer-decoder/issues/1
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ, D, BATCH = 16, 16, 32, 32

# random Markov chain: each token has 3 plausible successors
trans = torch.full((VOCAB, VOCAB), -1e9)
for a in range(VOCAB):
    nxt = torch.randperm(VOCAB)[:3]
    trans[a, nxt] = 0.0
trans = trans.softmax(-1)


def sample_corpus(n):
    x = torch.zeros(n, SEQ + 1, dtype=torch.long)
    x[:, 0] = torch.randint(0, VOCAB, (n,))
    for t in range(1, SEQ + 1):
        x[:, t] = torch.multinomial(trans[x[:, t - 1]], 1).squeeze(1)
    return x


corpus = sample_corpus(4096)


def sample_batch(n):
    rows = corpus[torch.randint(0, corpus.shape[0], (n,))]
    return rows[:, :-1], rows[:, 1:]


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(SEQ, D)
        layer = nn.TransformerEncoderLayer(
            D, nhead=4, dim_feedforward=4 * D, dropout=0.0, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.ln = nn.LayerNorm(D)
        self.lm_head = nn.Linear(D, VOCAB)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T))
        h = self.blocks(x)  # BUG-LINE
        return self.lm_head(self.ln(h))


model = TinyGPT()
opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
entropy = -(trans * trans.clamp_min(1e-12).log()).sum(-1).mean().item()
print(f"approximate chain entropy (best achievable loss): {entropy:.3f}")

for step in range(120):
    x, y = sample_batch(BATCH)
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")
print(f"final loss {loss.item():.4f}")
