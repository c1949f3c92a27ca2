"""Fine-tuning with the whole network in eval mode except one BatchNorm layer (FixRes style).

Unusual: model.eval() is called before the training loop so the pretrained BN running statistics
stay fixed, while gradients still flow and one chosen BN layer is switched back to train().
Source: https://github.com/facebookresearch/FixRes/issues/9
"""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 8, 3, padding=1),
    torch.nn.BatchNorm2d(8),
    torch.nn.ReLU(),
    torch.nn.Conv2d(8, 8, 3, padding=1),
    torch.nn.BatchNorm2d(8),
    torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1),
    torch.nn.Flatten(),
    torch.nn.Linear(8, 4),
)
model.eval()
model[4].train()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
for _step in range(8):
    x = torch.randn(8, 3, 16, 16)
    y = torch.randint(0, 4, (8,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
