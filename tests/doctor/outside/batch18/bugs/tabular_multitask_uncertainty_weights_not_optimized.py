"""Lightning multi-task tabular model whose learned task-uncertainty weights are never optimized.

The module combines a regression loss (house price) and a classification loss
(price band) with Kendall-style homoscedastic uncertainty weighting: one learnable
log-variance per task, registered as an nn.Parameter on the LightningModule.  But
configure_optimizers builds AdamW from self.backbone_and_heads.parameters() only,
so the log-variance parameters receive gradients that no optimizer ever applies.
The task weights stay frozen at their initial value (exp(0) = 1) for the whole
run; training looks normal, the multi-task loss falls, but the automatic loss
balancing the model was designed around never happens.  Nothing errors.

Source: https://github.com/ifzhang/FairMOT/issues/19
"""

import warnings

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(2)

N_NUM, N_CAT, CAT_CARD, N_BANDS = 6, 3, 10, 4


def make_table(n):
    num = torch.randn(n, N_NUM)
    cat = torch.randint(0, CAT_CARD, (n, N_CAT))
    cat_effect = torch.tensor([0.3, -0.2, 0.5])[None, :] * (cat.float() - CAT_CARD / 2) / CAT_CARD
    price = 3.0 * num[:, 0] - 2.0 * num[:, 1] + num[:, 2] * num[:, 3] + cat_effect.sum(1) * 4
    price = 10.0 * (price + 0.5 * torch.randn(n))
    band = torch.bucketize(price, torch.tensor([-20.0, 0.0, 20.0]))
    return num, cat, price.unsqueeze(1), band


class TabularTrunk(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.embs = nn.ModuleList([nn.Embedding(CAT_CARD, 8) for _ in range(N_CAT)])
        self.mlp = nn.Sequential(nn.Linear(N_NUM + 8 * N_CAT, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU())
        self.reg_head = nn.Linear(d, 1)
        self.cls_head = nn.Linear(d, N_BANDS)

    def forward(self, num, cat):
        e = torch.cat([emb(cat[:, i]) for i, emb in enumerate(self.embs)], dim=1)
        h = self.mlp(torch.cat([num, e], dim=1))
        return self.reg_head(h), self.cls_head(h)


class MultiTaskModule(pl.LightningModule):
    def __init__(self, lr=3e-3):
        super().__init__()
        self.lr = lr
        self.backbone_and_heads = TabularTrunk()
        self.log_vars = nn.Parameter(torch.zeros(2))

    def training_step(self, batch, batch_idx):
        num, cat, price, band = batch
        pred_price, band_logits = self.backbone_and_heads(num, cat)
        losses = torch.stack([F.mse_loss(pred_price, price), F.cross_entropy(band_logits, band)])
        total = (torch.exp(-self.log_vars) * losses + self.log_vars).sum()
        if self.global_step % 20 == 0:
            print(
                f"step {self.global_step:4d} total {total.item():8.3f} mse {losses[0].item():8.3f} "
                f"ce {losses[1].item():.3f} log_vars {self.log_vars.detach().tolist()}"
            )
        return total

    def configure_optimizers(self):
        return torch.optim.AdamW(self.backbone_and_heads.parameters(), lr=self.lr)  # BUG-LINE


def main():
    data = make_table(1536)
    loader = DataLoader(TensorDataset(*data), batch_size=64, shuffle=True)
    module = MultiTaskModule()
    trainer = pl.Trainer(
        max_epochs=4,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(module, loader)
    print("final task weights exp(-log_var):", torch.exp(-module.log_vars.detach()).tolist())


if __name__ == "__main__":
    main()
