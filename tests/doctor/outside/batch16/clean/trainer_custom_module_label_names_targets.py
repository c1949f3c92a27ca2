"""HF Trainer on a plain nn.Module whose label argument is called `targets`.

Unusual but correct: the model is not a PreTrainedModel; its forward takes
(features, targets) and returns a dict with "loss" and "logits". Because the
label argument is not named "labels", label_names=["targets"] is passed in
TrainingArguments so that the Trainer recognises the batch as labelled during
evaluation and reports eval_loss (and passes the targets to
compute_metrics). remove_unused_columns keeps both keys since they match the
forward signature.

Source: https://github.com/huggingface/transformers/issues/4361
"""

import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset
from transformers import Trainer, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)


class Blobs(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.y = torch.randint(0, 3, (n,), generator=g)
        centers = torch.tensor([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
        self.x = torch.cat([centers[self.y], torch.randn(n, 6, generator=g)], 1) + 0.6 * torch.randn(n, 8, generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"features": self.x[i], "targets": self.y[i]}


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))

    def forward(self, features, targets=None):
        logits = self.net(features)
        out = {"logits": logits}
        if targets is not None:
            out["loss"] = F.cross_entropy(logits, targets)
        return out


def accuracy(eval_pred):
    logits, targets = eval_pred
    return {"accuracy": float((np.argmax(logits, -1) == targets).mean())}


def main():
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=32,
        learning_rate=1e-2,
        max_steps=60,
        logging_steps=20,
        eval_strategy="steps",
        eval_steps=30,
        label_names=["targets"],
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = Trainer(
        model=MLP(), args=args, train_dataset=Blobs(640, 0), eval_dataset=Blobs(128, 1), compute_metrics=accuracy
    )
    trainer.train()
    print("final eval", trainer.evaluate())


if __name__ == "__main__":
    main()
