"""Word-level Transformer-encoder language model (in the style of the PyTorch LM tutorial).

Source: https://github.com/pytorch/tutorials/issues/2478

Bug: the model is trained for next-token prediction with an `nn.TransformerEncoder`, but the
encoder is called without a causal (square subsequent) mask. Every position can attend to the
following tokens, including the very token it has to predict, so the model learns to copy from the
future. The training loss collapses towards zero and the run looks like a great success, yet the
model is useless for actual left-to-right prediction (see the causal evaluation printed at the
end). Fix: pass `mask=nn.Transformer.generate_square_subsequent_mask(T)` (and `is_causal=True`).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB = 50
T = 24


def make_corpus(n_tokens, gen):
    # a noisy first-order Markov chain over the vocabulary
    trans = torch.softmax(torch.randn(VOCAB, VOCAB, generator=gen) * 1.0, -1)
    toks = [0]
    for _ in range(n_tokens - 1):
        toks.append(int(torch.multinomial(trans[toks[-1]], 1, generator=gen)))
    return torch.tensor(toks)


class TransformerLM(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(torch.randn(T, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, 2, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(d, VOCAB)

    def forward(self, x, mask=None):
        h = self.emb(x) + self.pos[: x.size(1)]
        h = self.encoder(h)  # BUG-LINE
        return self.out(h)


def causal_eval(model, data):
    # score each position using only the prefix up to it (true left-to-right prediction)
    model.eval()
    with torch.no_grad():
        x = data[:, :-1]
        losses = []
        for t in range(4, x.size(1), 4):
            logits = model(x[:, : t + 1])[:, -1]
            losses.append(F.cross_entropy(logits, data[:, t + 1]))
    model.train()
    return torch.stack(losses).mean().item()


def main():
    gen = torch.Generator().manual_seed(0)
    corpus = make_corpus(3000, gen)
    n = (len(corpus) - 1) // T
    seqs = corpus[: n * T + 1].unfold(0, T + 1, T)
    model = TransformerLM()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for step in range(100):
        idx = torch.randint(0, len(seqs), (16,), generator=gen)
        batch = seqs[idx]
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"step {step} train_loss {loss.item():.4f}")
    print(f"final train_loss {loss.item():.4f} causal_eval_loss {causal_eval(model, seqs[:32]):.4f}")


if __name__ == "__main__":
    main()
