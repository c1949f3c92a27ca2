"""A Hugging Face Trainer on a custom nn.Module whose hidden layers sit in a plain list: the Trainer's
optimizer (built from model.parameters()) never sees them.

Source: https://runebook.dev/zh/docs/pytorch/generated/torch.nn.modulelist/torch.nn.ModuleList
"""

import torch
import torch.nn.functional as F
from torch import nn
from transformers import Trainer, TrainingArguments

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(8, 16), nn.Linear(16, 16)]  # BUG-LINE
        self.out = nn.Linear(16, 2)

    def forward(self, x, labels=None):
        for layer in self.layers:
            x = torch.relu(layer(x))
        logits = self.out(x)
        return {"loss": F.cross_entropy(logits, labels), "logits": logits}


class Rows(torch.utils.data.Dataset):
    def __init__(self):
        self.x, self.y = torch.randn(64, 8), torch.randint(0, 2, (64,))

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.y[i]}


args = TrainingArguments(
    output_dir="/tmp/expkit-doctor-outside-hf", max_steps=3, per_device_train_batch_size=16, report_to=[],
    use_cpu=True, save_strategy="no", logging_strategy="no", disable_tqdm=True,
)  # fmt: skip
Trainer(model=Net(), args=args, train_dataset=Rows()).train()
