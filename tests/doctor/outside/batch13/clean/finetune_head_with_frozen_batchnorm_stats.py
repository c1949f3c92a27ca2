"""Fine-tuning a pretrained CNN backbone with frozen BatchNorm (statistics and affine parameters)
while training the head and the last conv block.

Source: https://github.com/jfzhang95/pytorch-deeplab-xception/issues/140

Clean program. Unusual but correct: the backbone is first "pretrained" on a source task, then
fine-tuned on a target task with a small batch. Because `model.train()` would switch every
BatchNorm back to batch statistics, a `train()` override re-applies `eval()` to all BatchNorm
layers each time the model is put into training mode, and the BN weights/biases have
`requires_grad=False` and are left out of the optimizer. The running statistics are verified to
stay unchanged during fine-tuning; the early conv layers are frozen on purpose.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


def make_data(n, gen, shift):
    x = torch.randn(n, 1, 16, 16, generator=gen)
    y = torch.randint(0, 3, (n,), generator=gen)
    for i in range(n):
        r = int(y[i]) * 5
        x[i, 0, r : r + 5, shift : shift + 8] += 1.5
    return x, y


class Net(nn.Module):
    def __init__(self, n_out):
        super().__init__()
        self.block1 = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2))
        self.block2 = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(16 * 4 * 4, n_out)
        self.freeze_bn = False

    def train(self, mode=True):
        super().train(mode)
        if mode and self.freeze_bn:
            for m in self.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.eval()
        return self

    def forward(self, x):
        return self.head(self.block2(self.block1(x)).flatten(1))


def run(model, opt, x, y, steps, bs, gen, tag):
    for step in range(steps):
        model.train()
        idx = torch.randint(0, len(x), (bs,), generator=gen)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"{tag} step {step} loss {loss.item():.4f}")


def main():
    gen = torch.Generator().manual_seed(0)
    xs, ys = make_data(384, gen, shift=2)
    model = Net(3)
    run(model, torch.optim.Adam(model.parameters(), lr=3e-3), xs, ys, 40, 32, gen, "pretrain")

    xt, yt = make_data(96, gen, shift=6)
    model.head = nn.Linear(16 * 4 * 4, 3)
    model.freeze_bn = True
    for p in model.block1.parameters():
        p.requires_grad_(False)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            for p in m.parameters():
                p.requires_grad_(False)
    bn_mean_before = model.block2[1].running_mean.clone()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=0.02, momentum=0.9)
    run(model, opt, xt, yt, 60, 4, gen, "finetune")
    model.eval()
    with torch.no_grad():
        acc = (model(xt).argmax(1) == yt).float().mean().item()
    drift = (model.block2[1].running_mean - bn_mean_before).abs().max().item()
    print(f"finetune acc {acc:.3f} bn_running_mean_drift {drift:.2e}")


if __name__ == "__main__":
    main()
