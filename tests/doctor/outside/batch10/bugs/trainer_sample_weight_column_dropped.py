"""Trains a small fraud-scoring MLP on an imbalanced synthetic tabular dataset with the Hugging
Face Trainer. Each row carries an importance weight so rare fraud cases count 10x; the model's
forward takes the weights as `sample_weight`, but the dataset column is called `weight`. With the
default remove_unused_columns=True, the Trainer inspects forward's signature and silently drops
every dataset column it does not recognize (only an info-level log line, hidden by default), so
`sample_weight` is always None and the loss is unweighted. Training looks normal; the minority
class is simply under-weighted.

Source: https://github.com/TIGER-AI-Lab/VLM2Vec/issues/42
"""

import tempfile

import torch
from datasets import Dataset
from torch import nn
from transformers import Trainer, TrainingArguments

torch.manual_seed(0)
F = 12


class FraudMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(F, 32), nn.ReLU(), nn.Linear(32, 1))
        self.weighted_batches = 0

    def forward(self, features, labels=None, sample_weight=None):
        logits = self.net(features).squeeze(-1)
        loss = None
        if labels is not None:
            per_row = nn.functional.binary_cross_entropy_with_logits(logits, labels, reduction="none")
            if sample_weight is not None:
                self.weighted_batches += 1
                loss = (per_row * sample_weight).sum() / sample_weight.sum()
            else:
                loss = per_row.mean()
        return {"loss": loss, "logits": logits}


g = torch.Generator().manual_seed(1)
x = torch.randn(2048, F, generator=g)
y = ((x[:, 0] + 0.5 * x[:, 1]) > 1.8).float()
w = torch.where(y > 0, 10.0, 1.0)
data = Dataset.from_dict({"features": x.tolist(), "labels": y.tolist(), "weight": w.tolist()})  # BUG-LINE
data.set_format("torch")

model = FraudMLP()
with tempfile.TemporaryDirectory() as out_dir:
    args = TrainingArguments(
        output_dir=out_dir,
        max_steps=30,
        per_device_train_batch_size=64,
        learning_rate=5e-3,
        report_to=[],
        logging_steps=10,
        save_strategy="no",
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=data)
    result = trainer.train()
with torch.no_grad():
    pred = (model(x)["logits"] > 0).float()
recall = (pred[y > 0] == 1).float().mean().item()
print(f"train loss {result.training_loss:.4f} weighted batches {model.weighted_batches} fraud recall {recall:.3f}")
