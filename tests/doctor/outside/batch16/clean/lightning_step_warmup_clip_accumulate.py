"""Lightning module with a per-step warmup schedule, Trainer-side clipping and accumulation.

Unusual but correct: configure_optimizers returns a LambdaLR warmup+linear
decay schedule in the dict form with "interval": "step", sized with
trainer.estimated_stepping_batches, which already accounts for
accumulate_grad_batches=2 (the scheduler is stepped once per optimizer step,
not per batch). Gradient clipping is done by the Trainer
(gradient_clip_val=1.0, by norm), so the module itself never clips. AdamW
parameter groups exclude biases from weight decay.

Source: https://github.com/Lightning-AI/pytorch-lightning/pull/19774
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)


class Classifier(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 3))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        if batch_idx % 16 == 0:
            lr = self.trainer.optimizers[0].param_groups[0]["lr"]
            print(f"epoch {self.current_epoch} batch {batch_idx} loss {loss.item():.4f} lr {lr:.5f}")
        return loss

    def configure_optimizers(self):
        decay = [p for n, p in self.named_parameters() if n.endswith("weight")]
        no_decay = [p for n, p in self.named_parameters() if n.endswith("bias")]
        optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=5e-3
        )
        total = self.trainer.estimated_stepping_batches
        warmup = max(1, int(0.1 * total))

        def lr_lambda(step):
            if step < warmup:
                return (step + 1) / warmup
            return max(0.0, (total - step) / max(1, total - warmup))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def main():
    x = torch.randn(1536, 12)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    trainer = pl.Trainer(
        max_epochs=3,
        accelerator="cpu",
        devices=1,
        gradient_clip_val=1.0,
        accumulate_grad_batches=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Classifier(), loader)


if __name__ == "__main__":
    main()
