"""Customer churn + lifetime-value multi-task model trained with a Trainer subclass and gradient accumulation.

Unusual but correct: the Trainer subclass overrides compute_loss to combine a
churn BCE loss with a masked LTV regression loss (LTV is only known for part of
the customers; missing targets are NaN in the data and excluded through a mask,
not replaced by zeros).  The model's forward has no **kwargs, so Trainer does not
treat the returned loss as already normalized by num_items_in_batch; compute_loss
returns a per-micro-batch mean of equal-sized micro-batches and Trainer divides
it by gradient_accumulation_steps before backward, which gives the exact mean
over the accumulated batch.  A custom collator builds the tensors, so
remove_unused_columns=False keeps the raw columns.

Source: https://github.com/huggingface/transformers/pull/35207
"""

import tempfile
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from datasets import Dataset
from transformers import Trainer, TrainerCallback, TrainingArguments
from transformers.utils import logging as hf_logging

warnings.filterwarnings("ignore")
hf_logging.set_verbosity_error()
torch.manual_seed(0)
torch.set_num_threads(2)

N_FEATS = 12


def customers(n):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, N_FEATS, generator=g)
    churn = torch.bernoulli(torch.sigmoid(2 * x[:, 0] - 1.5 * x[:, 1] + x[:, 2] * x[:, 3]), generator=g)
    ltv = 3 + x[:, 4] - 0.8 * x[:, 5] + 0.5 * x[:, 0] + 0.1 * torch.randn(n, generator=g)
    known = torch.rand(n, generator=g) < 0.4
    ltv = torch.where(known, ltv, torch.full_like(ltv, float("nan")))
    return {"features": x.tolist(), "churn": churn.tolist(), "ltv": ltv.tolist()}


def collate(rows):
    return {
        "features": torch.stack([r["features"] for r in rows]),
        "churn": torch.stack([r["churn"] for r in rows]),
        "ltv": torch.stack([r["ltv"] for r in rows]),
    }


class ChurnLTV(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(N_FEATS, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.churn_head = nn.Linear(64, 1)
        self.ltv_head = nn.Linear(64, 1)

    def forward(self, features):
        h = self.trunk(features)
        return self.churn_head(h).squeeze(-1), self.ltv_head(h).squeeze(-1)


class MultiTaskTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        churn_logit, ltv_pred = model(inputs["features"])
        churn_loss = F.binary_cross_entropy_with_logits(churn_logit, inputs["churn"])
        mask = ~torch.isnan(inputs["ltv"])
        if mask.any():
            ltv_loss = F.mse_loss(ltv_pred[mask], inputs["ltv"][mask])
        else:
            ltv_loss = ltv_pred.sum() * 0.0
        loss = churn_loss + 0.5 * ltv_loss
        return (loss, (churn_logit, ltv_pred)) if return_outputs else loss


class PrintLoss(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            print(f"optimizer step {state.global_step:3d} loss {logs['loss']:.4f}")


def main():
    ds = Dataset.from_dict(customers(2048)).with_format("torch")
    model = ChurnLTV()
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=32,
        gradient_accumulation_steps=4,
        learning_rate=5e-3,
        max_steps=60,
        warmup_steps=10,
        weight_decay=0.01,
        logging_steps=20,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        remove_unused_columns=False,
        disable_tqdm=True,
        seed=0,
    )
    trainer = MultiTaskTrainer(model=model, args=args, train_dataset=ds, data_collator=collate, callbacks=[PrintLoss()])
    trainer.train()
    batch = collate([ds[i] for i in range(1000)])
    with torch.no_grad():
        c, l = model(batch["features"])
    m = ~torch.isnan(batch["ltv"])
    acc = ((c > 0).float() == batch["churn"]).float().mean().item()
    print(f"churn accuracy {acc:.3f}  ltv mse (known) {F.mse_loss(l[m], batch['ltv'][m]).item():.4f}")


if __name__ == "__main__":
    main()
