"""Lightning manual optimization training two models alternately, with schedulers stepped once
per epoch by hand.

Unusual on purpose: `automatic_optimization = False`; model A (a tiny GPT-2 LM) is updated on
even batches and model B (a linear probe on A's *detached* last hidden state, predicting the
sequence's step size) on odd batches, each with its own optimizer. Because Lightning does not
step schedulers in manual mode, both StepLR schedulers are stepped explicitly on the last
batch of each epoch (`self.trainer.is_last_batch`), so the lr halves once per epoch.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/17738
"""

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, T = 40, 12


class Alternating(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.lm = GPT2LMHeadModel(
            GPT2Config(vocab_size=V, n_positions=T, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
        )
        self.probe = torch.nn.Linear(32, 3)

    def training_step(self, batch, batch_idx):
        ids, step_cls = batch
        opt_lm, opt_probe = self.optimizers()
        if batch_idx % 2 == 0:
            loss = self.lm(input_ids=ids, labels=ids).loss
            opt_lm.zero_grad()
            self.manual_backward(loss)
            opt_lm.step()
        else:
            with torch.no_grad():
                h = self.lm.transformer(input_ids=ids).last_hidden_state[:, -1]
            loss = F.cross_entropy(self.probe(h), step_cls)
            opt_probe.zero_grad()
            self.manual_backward(loss)
            opt_probe.step()
        if self.trainer.is_last_batch:
            for sch in self.lr_schedulers():
                sch.step()
            print(f"epoch {self.current_epoch} last loss {loss.item():.4f} lr_lm {opt_lm.param_groups[0]['lr']:.5f}")

    def configure_optimizers(self):
        opt_lm = torch.optim.AdamW(self.lm.parameters(), lr=4e-3)
        opt_probe = torch.optim.AdamW(self.probe.parameters(), lr=1e-2)
        return (
            [opt_lm, opt_probe],
            [torch.optim.lr_scheduler.StepLR(opt_lm, 1, 0.5), torch.optim.lr_scheduler.StepLR(opt_probe, 1, 0.5)],
        )


steps = torch.randint(0, 3, (192,))
ids = (torch.randint(0, V, (192, 1)) + (steps[:, None] + 1) * torch.arange(T)) % V
loader = DataLoader(TensorDataset(ids, steps), batch_size=16, shuffle=True)
trainer = pl.Trainer(
    max_epochs=4,
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(Alternating(), loader)
