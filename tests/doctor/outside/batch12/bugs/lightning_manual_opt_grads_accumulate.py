"""Trains a small recommendation model (user/item embeddings with a dot-product score, implicit
feedback with sampled negatives) in PyTorch Lightning using manual optimization. training_step calls
self.manual_backward(loss) and opt.step() but never opt.zero_grad(), and in manual optimization
Lightning does not zero gradients for you. Gradients therefore accumulate over all previous batches,
so every step applies the running sum of all past gradients. No error or warning is raised and the loss
still moves.

Source: https://github.com/Lightning-AI/pytorch-lightning/pull/6147
"""

import lightning as L
import torch
import torch.nn as nn

torch.manual_seed(0)
U, I, D = 200, 300, 16
true_u, true_i = torch.randn(U, 4), torch.randn(I, 4)
pairs = torch.stack([torch.randint(0, U, (6000,)), torch.randint(0, I, (6000,))], 1)
pos = pairs[(true_u[pairs[:, 0]] * true_i[pairs[:, 1]]).sum(1) > 1.0]


class MF(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.user = nn.Embedding(U, D)
        self.item = nn.Embedding(I, D)
        nn.init.normal_(self.user.weight, std=0.1)
        nn.init.normal_(self.item.weight, std=0.1)

    def score(self, u, i):
        return (self.user(u) * self.item(i)).sum(-1)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        (up,) = batch
        u, i = up[:, 0], up[:, 1]
        neg = torch.randint(0, I, i.shape)
        loss = -nn.functional.logsigmoid(self.score(u, i) - self.score(u, neg)).mean()
        self.manual_backward(loss)  # BUG-LINE
        opt.step()
        self.log("bpr", loss)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.5)


model = MF()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(pos), batch_size=64, shuffle=True)
L.Trainer(
    max_steps=30,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    accelerator="cpu",
    enable_model_summary=False,
).fit(model, loader)
with torch.no_grad():
    u, i = pos[:, 0], pos[:, 1]
    neg = torch.randint(0, I, i.shape)
    print("pairwise ranking accuracy:", (model.score(u, i) > model.score(u, neg)).float().mean().item())
