"""HF Trainer with a per-example weighted loss: the weight column never reaches compute_loss.

The dataset carries a `sample_weight` column that zeroes out examples whose labels are known to
be corrupted. A Trainer subclass reads it in compute_loss and falls back to uniform weights when
the key is absent. TrainingArguments keeps the default remove_unused_columns=True, so the Trainer
inspects the model's forward signature (x, labels), deletes every other dataset column before
batching, and `sample_weight` silently disappears. compute_loss takes the fallback path on every
step and the model is trained on the corrupted labels with full weight.

Source: https://github.com/huggingface/transformers/issues/43598
"""

import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from datasets import Dataset
from transformers import Trainer, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)

n, d = 1200, 10
x = torch.randn(n, d)
w_true = torch.randn(d)
y = (x @ w_true > 0).long()
corrupt = torch.rand(n) < 0.4
y_obs = torch.where(corrupt, 1 - y, y)  # 40% flipped labels
weight = (~corrupt).float()  # known-bad rows get weight 0
ds = Dataset.from_dict({"x": x.tolist(), "labels": y_obs.tolist(), "sample_weight": weight.tolist()})
ds.set_format("torch")

x_test = torch.randn(500, d)
y_test = (x_test @ w_true > 0).long()


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, x, labels=None):
        return {"logits": self.net(x)}


class WeightedTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        sw = inputs.pop("sample_weight", None)
        out = model(**inputs)
        per_ex = F.cross_entropy(out["logits"], labels, reduction="none")
        if sw is None:
            sw = torch.ones_like(per_ex)
        loss = (per_ex * sw).sum() / sw.sum().clamp_min(1.0)
        return (loss, out) if return_outputs else loss


model = MLP()
args = TrainingArguments(  # BUG-LINE
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=64,
    max_steps=120,
    learning_rate=3e-3,
    logging_steps=20,
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
    seed=0,
)
trainer = WeightedTrainer(model=model, args=args, train_dataset=ds)
trainer.train()

with torch.no_grad():
    acc = (model(x_test)["logits"].argmax(-1) == y_test).float().mean().item()
print(f"clean test accuracy: {acc:.3f}")
