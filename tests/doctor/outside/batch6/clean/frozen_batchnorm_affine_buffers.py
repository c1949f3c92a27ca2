"""Detection-style fine-tuning replaces the backbone's BatchNorm with a FrozenBatchNorm: statistics AND affine
scale/shift are registered as buffers, so they are neither trained nor updated by batch statistics, while the
convolutions around them still learn. The normalisation layers having no parameters is intentional.

Source: https://github.com/facebookresearch/detectron2/blob/main/detectron2/layers/batch_norm.py
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class FrozenBatchNorm2d(nn.Module):
    def __init__(self, n, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(n))
        self.register_buffer("bias", torch.zeros(n))
        self.register_buffer("running_mean", torch.zeros(n))
        self.register_buffer("running_var", torch.ones(n) - eps)

    def forward(self, x):
        scale = self.weight * (self.running_var + self.eps).rsqrt()
        bias = self.bias - self.running_mean * scale
        return x * scale.view(1, -1, 1, 1) + bias.view(1, -1, 1, 1)


pretrained = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
pretrained[1].running_mean.uniform_(-0.2, 0.2)
frozen = FrozenBatchNorm2d(16)
frozen.running_mean.copy_(pretrained[1].running_mean)
backbone = nn.Sequential(pretrained[0], frozen, nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 4))
model = nn.Sequential(backbone, head)
opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
X, y = torch.randn(32, 3, 16, 16), torch.randint(0, 4, (32,))
for i in range(0, 32, 8):
    loss = F.cross_entropy(model(X[i : i + 8]), y[i : i + 8])
    opt.zero_grad()
    loss.backward()
    opt.step()
