"""Small 1-D CNN with BatchNorm trained with stochastic weight averaging, done with all the steps.

Unusual but correct: after a normal SGD phase the run switches to SWALR and
averages the weights into an AveragedModel every epoch. Because the averaged
weights were never used in a forward pass during training, the BatchNorm
statistics of the averaged model are recomputed with
torch.optim.swa_utils.update_bn over the training loader before evaluation,
as the SWA authors explain in the source. Both the plain and SWA models are
evaluated at the end.

Source: https://github.com/wjmaddox/swa_gaussian/issues/7
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)


def make_data(n, length=48):
    y = torch.randint(0, 4, (n,))
    t = torch.linspace(0, 6.28, length)
    x = torch.sin((y + 1).float()[:, None] * t) * (1 + 0.3 * torch.randn(n, 1)) + 0.8 * torch.randn(n, length)
    return (2.0 + 4.0 * x).unsqueeze(1), y


x_tr, y_tr = make_data(2000)
x_va, y_va = make_data(600)
loader = DataLoader(TensorDataset(x_tr, y_tr), batch_size=100, shuffle=True)

model = nn.Sequential(
    nn.Conv1d(1, 16, 5, padding=2),
    nn.BatchNorm1d(16),
    nn.ReLU(),
    nn.Conv1d(16, 32, 5, padding=2),
    nn.BatchNorm1d(32),
    nn.ReLU(),
    nn.AdaptiveAvgPool1d(1),
    nn.Flatten(),
    nn.Linear(32, 4),
)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
swa_model = AveragedModel(model)
swa_sched = SWALR(opt, swa_lr=0.03, anneal_epochs=1)
SWA_START = 3


@torch.no_grad()
def accuracy(net):
    net.eval()
    return (net(x_va).argmax(-1) == y_va).float().mean().item()


for epoch in range(8):
    model.train()
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if epoch >= SWA_START:
        swa_model.update_parameters(model)
        swa_sched.step()
    print(f"epoch {epoch} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.3f} acc {accuracy(model):.3f}")

update_bn(loader, swa_model)
print(f"final model_acc {accuracy(model):.3f} swa_acc {accuracy(swa_model):.3f}")
