"""Image classification with a CNN backbone whose intermediate feature map is captured by a forward hook (a
reusable "feature extractor" wrapper, as used for multi-head models), followed by a linear head on the pooled
hooked features. The backbone is meant to be fine-tuned together with the head and its parameters are in the
optimizer, but the hook stores output.detach().clone(), so the head's loss never reaches the backbone:
backbone grads stay None and Adam silently skips those parameters. Only the linear head trains; there is no
error because a graph still exists from the head's own weights.
Source: https://github.com/lucidrains/CoCa-pytorch/issues/6
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


def shapes(n):
    y = torch.randint(0, 3, (n,))
    x = torch.randn(n, 1, 16, 16) * 0.4
    for i in range(n):
        k = int(y[i])
        if k == 0:
            x[i, 0, 4:12, 7:9] += 1.0
        elif k == 1:
            x[i, 0, 7:9, 4:12] += 1.0
        else:
            x[i, 0, 4:12, 4:12] += torch.eye(8)
    return x, y


class Extractor(nn.Module):
    def __init__(self, backbone, layer):
        super().__init__()
        self.backbone = backbone
        self.feats = None
        layer.register_forward_hook(self._hook)

    def _hook(self, module, inp, output):
        self.feats = output.detach().clone()  # BUG-LINE

    def forward(self, x):
        self.backbone(x)
        return self.feats


backbone = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 8, 1)
)
extractor = Extractor(backbone, backbone[3])
head = nn.Linear(16, 3)
opt = torch.optim.Adam(list(backbone.parameters()) + list(head.parameters()), lr=3e-3)
w0 = backbone[0].weight.clone()
for step in range(80):
    x, y = shapes(32)
    f = extractor(x)
    loss = F.cross_entropy(head(f.amax((2, 3))), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.4f}")
print("backbone first conv change:", round((backbone[0].weight - w0).norm().item(), 5))
xv, yv = shapes(300)
with torch.no_grad():
    print("val acc:", round((head(extractor(xv).amax((2, 3))).argmax(1) == yv).float().mean().item(), 4))
