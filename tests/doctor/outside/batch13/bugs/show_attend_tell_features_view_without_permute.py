"""Show-attend-tell style image captioner: CNN encoder -> per-pixel features -> attention GRU decoder.

Source: https://github.com/fawazsammani/knowing-when-to-look-adaptive-attention/issues/6

Bug: the encoder output of shape (B, C, H, W) is turned into a set of H*W "pixel" vectors with
`.view(B, H * W, C)` directly, without first permuting to (B, H, W, C). `view` just reinterprets
memory, so each resulting "pixel" vector is a chunk of one channel's spatial map (spread over
several channels' worth of memory) instead of the C-dimensional feature of one location. The
attention decoder then attends over scrambled vectors that no longer correspond to image regions.
No shape error occurs and the caption loss still decreases (the network partly compensates by
memorising the scrambled layout), but the attention weights no longer refer to image regions. Fix: `feats.permute(0, 2, 3, 1).reshape(B, H * W, C)`.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

# vocabulary: <bos>=0, <eos>=1, colours 2-4, positions 5-8
COLOURS = ["red", "green", "blue"]
POSITIONS = ["top-left", "top-right", "bottom-left", "bottom-right"]
VOCAB = 2 + len(COLOURS) + len(POSITIONS)
S = 16


def make_data(n, gen):
    imgs = 0.1 * torch.randn(n, 3, S, S, generator=gen)
    caps = torch.zeros(n, 4, dtype=torch.long)
    for i in range(n):
        c = int(torch.randint(0, 3, (1,), generator=gen))
        p = int(torch.randint(0, 4, (1,), generator=gen))
        r0 = 0 if p in (0, 1) else S // 2
        c0 = 0 if p in (0, 2) else S // 2
        imgs[i, c, r0 + 2 : r0 + 6, c0 + 2 : c0 + 6] += 1.0
        caps[i] = torch.tensor([0, 2 + c, 5 + p, 1])
    return imgs, caps


class Encoder(nn.Module):
    def __init__(self, C=16):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, C, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(C, C, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )

    def forward(self, x):
        f = self.net(x)  # (B, C, 4, 4)
        B, C, H, W = f.shape
        return f.view(B, H * W, C)  # BUG-LINE


class AttnDecoder(nn.Module):
    def __init__(self, C=16, d=32):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.att_f = nn.Linear(C, d)
        self.att_h = nn.Linear(d, d)
        self.att_v = nn.Linear(d, 1)
        self.cell = nn.GRUCell(d + C, d)
        self.out = nn.Linear(d, VOCAB)
        self.init_h = nn.Linear(C, d)

    def forward(self, feats, caps):
        h = torch.tanh(self.init_h(feats.mean(1)))
        logits = []
        for t in range(caps.size(1) - 1):
            e = self.att_v(torch.tanh(self.att_f(feats) + self.att_h(h)[:, None])).squeeze(-1)
            ctx = (e.softmax(-1)[..., None] * feats).sum(1)
            h = self.cell(torch.cat([self.emb(caps[:, t]), ctx], -1), h)
            logits.append(self.out(h))
        return torch.stack(logits, 1)


def main():
    gen = torch.Generator().manual_seed(0)
    imgs, caps = make_data(256, gen)
    enc, dec = Encoder(), AttnDecoder()
    opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=3e-3)
    bs = 32
    for epoch in range(5):
        perm = torch.randperm(len(imgs))
        tot = 0.0
        for i in range(0, len(imgs), bs):
            idx = perm[i : i + bs]
            logits = dec(enc(imgs[idx]), caps[idx])
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), caps[idx, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(idx)
        with torch.no_grad():
            pred = dec(enc(imgs), caps).argmax(-1)
            pos_acc = (pred[:, 1] == caps[:, 2]).float().mean().item()
        print(f"epoch {epoch} loss {tot / len(imgs):.4f} position_word_acc {pos_acc:.3f}")


if __name__ == "__main__":
    main()
