"""Text classification (embedding + mean-pooled BiGRU) with FGM adversarial training on the word
embeddings: each step does a normal forward/backward, then perturbs the embedding matrix along
its normalised gradient (epsilon * g / ||g||), does a second forward/backward on the perturbed
embeddings so the adversarial loss gradient is *added* to the clean one, restores the original
embedding weights, and only then takes one optimizer step. The two backward passes, the
in-place edit of a parameter's .data and its restoration before optimizer.step() are all
intentional.

Source: https://arxiv.org/abs/1605.07725
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

VOCAB, SEQ, EMB = 40, 12, 32
POS_WORDS, NEG_WORDS = [4, 5, 6], [7, 8, 9]


def make_batch(n):
    toks = torch.randint(10, VOCAB, (n, SEQ))
    y = torch.randint(0, 2, (n,))
    for i in range(n):
        words = POS_WORDS if y[i] == 1 else NEG_WORDS
        for p in torch.randperm(SEQ)[:2].tolist():
            toks[i, p] = words[int(torch.randint(0, 3, (1,)))]
    return toks, y


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, EMB)
        self.rnn = nn.GRU(EMB, 32, batch_first=True, bidirectional=True)
        self.out = nn.Linear(64, 2)

    def forward(self, toks):
        h, _ = self.rnn(self.emb(toks))
        return self.out(h.mean(1))


class FGM:
    def __init__(self, module, eps=0.5):
        self.module, self.eps, self.backup = module, eps, None

    def attack(self):
        w = self.module.weight
        self.backup = w.data.clone()
        norm = w.grad.norm()
        if norm > 0:
            w.data.add_(self.eps * w.grad / norm)

    def restore(self):
        self.module.weight.data.copy_(self.backup)
        self.backup = None


model = Classifier()
fgm = FGM(model.emb)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(60):
    toks, y = make_batch(32)
    opt.zero_grad()
    loss = F.cross_entropy(model(toks), y)
    loss.backward()
    fgm.attack()
    adv_loss = F.cross_entropy(model(toks), y)
    adv_loss.backward()
    fgm.restore()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} clean loss {loss.item():.4f} adversarial loss {adv_loss.item():.4f}")

with torch.no_grad():
    toks, y = make_batch(400)
    print(f"final accuracy {(model(toks).argmax(1) == y).float().mean().item():.3f}")
