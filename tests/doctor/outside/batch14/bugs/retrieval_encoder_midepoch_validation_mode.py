"""Image-text style embedding model validated every few iterations inside an epoch.

model.train() is called only once at the start of each epoch, while the
mid-epoch validate() switches the model to eval() and never switches it back.
After the first validation of every epoch the remaining iterations train with
dropout disabled and BatchNorm frozen on its running statistics (which also
stop updating), so most of the training runs in eval mode. Nothing errors.

Source: https://github.com/fartashf/vsepp/issues/4
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class Encoder(nn.Module):
    def __init__(self, d_in, d_emb):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_in, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, d_emb)
        )

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


class PairModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.img = Encoder(40, 32)
        self.txt = Encoder(24, 32)


def contrastive(im, tx, temp=0.1):
    logits = im @ tx.t() / temp
    target = torch.arange(im.shape[0])
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.t(), target)) / 2


latent = torch.randn(3000, 16)
imgs = latent @ torch.randn(16, 40) + 1.5 * torch.randn(3000, 40)
txts = latent @ torch.randn(16, 24) + 1.5 * torch.randn(3000, 24)
tr_i, tr_t, va_i, va_t = imgs[:2500], txts[:2500], imgs[2500:], txts[2500:]

model = PairModel()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
VAL_STEP = 10


def validate():
    model.eval()
    with torch.no_grad():
        im, tx = model.img(va_i), model.txt(va_t)
        r1 = ((im @ tx.t()).argmax(-1) == torch.arange(im.shape[0])).float().mean().item()
    return r1


it = 0
for epoch in range(4):
    model.train()  # BUG-LINE
    perm = torch.randperm(tr_i.shape[0])
    for b in range(0, tr_i.shape[0] - 99, 100):
        idx = perm[b : b + 100]
        loss = contrastive(model.img(tr_i[idx]), model.txt(tr_t[idx]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        it += 1
        if it % VAL_STEP == 0:
            r1 = validate()
            if it % 50 == 0:
                print(f"epoch {epoch} iter {it} loss {loss.item():.4f} R@1 {r1:.3f}")
