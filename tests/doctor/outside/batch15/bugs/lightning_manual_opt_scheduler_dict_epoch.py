"""Lightning module with manual optimization and a StepLR declared in configure_optimizers.

With `automatic_optimization = False`, Lightning does not call `lr_scheduler.step()`; the
"interval"/"frequency" keys of the scheduler config are ignored and the user must step the
scheduler. Here the scheduler is only declared, never stepped, so the learning rate stays
at its initial (high) value for the whole run instead of decaying every epoch. Training
completes without any message.

Source: https://github.com/Lightning-AI/pytorch-lightning/pull/13267
"""

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, TensorDataset
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, T = 48, 16


class TinyLM(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.lm = GPT2LMHeadModel(GPT2Config(vocab_size=V, n_positions=T, n_embd=32, n_layer=2, n_head=2))

    def training_step(self, batch, batch_idx):
        (ids,) = batch
        opt = self.optimizers()
        loss = self.lm(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()
        if batch_idx == 0:
            lr = opt.param_groups[0]["lr"]
            print(f"epoch {self.current_epoch} loss {loss.item():.4f} lr {lr:.5f}")
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=5e-3)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}  # BUG-LINE


start = torch.randint(0, V, (256, 1))
ids = (start + torch.arange(T) * 3) % V
loader = DataLoader(TensorDataset(ids), batch_size=32, shuffle=True)
trainer = pl.Trainer(
    max_epochs=5,
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(TinyLM(), loader)
