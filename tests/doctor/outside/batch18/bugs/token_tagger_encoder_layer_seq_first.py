"""Token tagger built on nn.TransformerEncoder fed batch-first tensors.

Source: https://github.com/DaoyuanLi2816/Molecule-Generator/pull/22

The encoder layers are created with the default ``batch_first=False`` while the
model feeds them ``(batch, seq, embed)`` tensors.  PyTorch then treats the batch
axis as the sequence axis: self-attention mixes information across different
examples of the batch, and the positions inside one example are processed as
independent "batch" items.  Nothing errors (shapes are symmetric enough), the
loss falls a little, but the per-sequence task (tag each token that equals the
first token of its own sequence) cannot be learned.
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

CFG = dict(vocab=24, pad_id=0, d_model=64, n_heads=4, n_layers=2, ff=128, seq_len=16, batch=32, steps=150, lr=2e-3)


def make_batch(cfg, gen):
    b, t = cfg["batch"], cfg["seq_len"]
    x = torch.randint(1, cfg["vocab"], (b, t), generator=gen)
    # plant copies of the first token so that both classes occur
    plant = torch.rand(b, t, generator=gen) < 0.3
    x = torch.where(plant, x[:, :1].expand(-1, t), x)
    y = (x == x[:, :1]).long()
    y[:, 0] = 1
    return x, y


class SinusoidalPositions(nn.Module):
    def __init__(self, d_model, max_len=512):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        pos = torch.arange(max_len).unsqueeze(1).float()
        div = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):  # x: (B, T, E)
        return x + self.pe[: x.size(1)].unsqueeze(0)


class TokenTagger(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg["vocab"], cfg["d_model"], padding_idx=cfg["pad_id"])
        self.pos = SinusoidalPositions(cfg["d_model"])
        layer = nn.TransformerEncoderLayer(cfg["d_model"], cfg["n_heads"], cfg["ff"], dropout=0.0)  # BUG-LINE
        self.encoder = nn.TransformerEncoder(layer, cfg["n_layers"], enable_nested_tensor=False)
        self.head = nn.Linear(cfg["d_model"], 2)

    def forward(self, ids):
        h = self.pos(self.embed(ids) * math.sqrt(self.embed.embedding_dim))
        h = self.encoder(h)
        return self.head(h)


def main():
    cfg = CFG
    gen = torch.Generator().manual_seed(1)
    model = TokenTagger(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    loss_fn = nn.CrossEntropyLoss()
    for step in range(cfg["steps"]):
        x, y = make_batch(cfg, gen)
        logits = model(x)
        loss = loss_fn(logits.reshape(-1, 2), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0 or step == cfg["steps"] - 1:
            acc = (logits.argmax(-1) == y).float().mean().item()
            print(f"step {step:3d} loss {loss.item():.4f} token-acc {acc:.3f}")


if __name__ == "__main__":
    main()
