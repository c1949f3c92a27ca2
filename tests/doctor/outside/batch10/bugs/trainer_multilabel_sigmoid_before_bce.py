"""Trains a small multi-label tagging MLP on synthetic tabular features with the Hugging Face
Trainer. A Trainer subclass overrides compute_loss to add per-tag positive weights, and feeds
torch.sigmoid(logits) into BCEWithLogitsLoss. BCEWithLogitsLoss applies its own sigmoid, so the
loss sees sigmoid(sigmoid(z)) which is squeezed into (0.5, 0.73): the loss can never approach
zero, its gradient is damped by the extra sigmoid derivative, and negative tags are pushed toward
probability 0.5 instead of 0. No error, no warning: the loss simply plateaus high.

Source: https://github.com/lopuhin/kaggle-imet-2019/issues/3
"""

import tempfile

import torch
from torch import nn
from torch.utils.data import Dataset
from transformers import Trainer, TrainingArguments

torch.manual_seed(0)
F, K = 16, 5


class TagMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(F, 64), nn.ReLU(), nn.Linear(64, K))

    def forward(self, features, labels=None):
        return {"logits": self.net(features)}


class Tags(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(n, F, generator=g)
        w = torch.randn(F, K, generator=g)
        self.y = (self.x @ w > 0.5).float()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"features": self.x[i], "labels": self.y[i]}


class WeightedBCETrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        probs = torch.sigmoid(outputs["logits"])  # BUG-LINE
        loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.full((K,), 1.5))
        loss = loss_fn(probs, labels)
        return (loss, outputs) if return_outputs else loss


model = TagMLP()
with tempfile.TemporaryDirectory() as out_dir:
    args = TrainingArguments(
        output_dir=out_dir,
        max_steps=40,
        per_device_train_batch_size=32,
        learning_rate=1e-2,
        report_to=[],
        logging_steps=10,
        save_strategy="no",
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
        remove_unused_columns=False,
    )
    trainer = WeightedBCETrainer(model=model, args=args, train_dataset=Tags(1024))
    result = trainer.train()
ds = Tags(1024)
with torch.no_grad():
    pred = (model(ds.x)["logits"] > 0).float()
print(f"train loss {result.training_loss:.4f} tag accuracy {(pred == ds.y).float().mean().item():.3f}")
