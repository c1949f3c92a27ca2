"""Linear evaluation (linear probe) of a 'pretrained' conv backbone.

The script freezes every backbone parameter (requires_grad=False) and trains only
the final fc layer, but the training loop calls model.train() on the whole model.
The frozen backbone's BatchNorm layers therefore normalise with batch statistics and
keep overwriting their running_mean / running_var with statistics of the probe data,
so the 'frozen' backbone is silently not frozen and the reported linear-probe
numbers are not those of the pretrained features. The fix is to keep the backbone
in eval mode (only the head in train mode).

Source: https://github.com/kdexd/virtex/issues/16
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


def conv_bn(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class TinyResNetish(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.stem = conv_bn(3, 16)
        self.layer1 = conv_bn(16, 32, 2)
        self.layer2 = conv_bn(32, 64, 2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, num_classes)

    def features(self, x):
        return self.pool(self.layer2(self.layer1(self.stem(x)))).flatten(1)

    def forward(self, x):
        return self.fc(self.features(x))


def synthetic_images(n, num_classes, shift=0.0, scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, num_classes, (n,), generator=g)
    protos = torch.randn(num_classes, 3, 16, 16, generator=torch.Generator().manual_seed(123))
    x = protos[y] + 2.0 * torch.randn(n, 3, 16, 16, generator=g)
    return x * scale + shift, y


def pretrain(model, steps=80):
    x, y = synthetic_images(1024, 10, seed=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.train()
    for s in range(steps):
        idx = torch.randint(0, len(x), (64,))
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"pretrain done, last loss {loss.item():.4f}")


def build_linear_eval_model(pretrained, num_classes):
    model = copy.deepcopy(pretrained)
    model.fc = nn.Linear(64, num_classes)
    for name, p in model.named_parameters():
        if not name.startswith("fc."):
            p.requires_grad = False
    return model


def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def main():
    backbone = TinyResNetish(10)
    pretrain(backbone)

    # downstream dataset: different photometric statistics
    xtr, ytr = synthetic_images(768, 10, shift=0.7, scale=1.6, seed=2)
    xte, yte = synthetic_images(512, 10, shift=0.7, scale=1.6, seed=3)

    model = build_linear_eval_model(backbone, 10)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1, momentum=0.9)
    for epoch in range(4):
        model.train()  # BUG-LINE
        perm = torch.randperm(len(xtr))
        for i in range(0, len(xtr), 64):
            idx = perm[i : i + 64]
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        acc = evaluate(model, xte, yte)
        print(f"epoch {epoch} loss {loss.item():.4f} test_acc {acc:.3f}")


if __name__ == "__main__":
    main()
