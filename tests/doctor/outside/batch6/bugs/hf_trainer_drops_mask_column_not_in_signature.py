"""A custom classifier takes its padding mask through ``**kwargs``. Trainer's ``remove_unused_columns`` keeps
only dataset columns named in ``forward``'s signature, so the ``attention_mask`` column is silently removed
(an info-level log line only) and the model attends to padding on every step.

Source: https://github.com/huggingface/transformers/issues/7548
"""

import tempfile

import torch
import torch.nn.functional as F
from datasets import Dataset
from torch import nn
from transformers import Trainer, TrainingArguments
from transformers.utils import logging

logging.set_verbosity_error()
torch.manual_seed(0)


class MaskedMeanClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16, padding_idx=0)
        self.head = nn.Linear(16, 2)

    def forward(self, input_ids, labels=None, **kwargs):  # BUG-LINE
        mask = kwargs.get("attention_mask")
        if mask is None:
            mask = torch.ones_like(input_ids)
        h = (self.emb(input_ids) * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
        logits = self.head(h)
        return {"loss": F.cross_entropy(logits, labels), "logits": logits}


lengths = torch.randint(3, 12, (64,))
ids = torch.randint(1, 50, (64, 12))
mask = (torch.arange(12)[None] < lengths[:, None]).long()
ds = Dataset.from_dict(
    {"input_ids": (ids * mask).tolist(), "attention_mask": mask.tolist(), "labels": (lengths > 7).long().tolist()}
)
with tempfile.TemporaryDirectory() as tmp:
    args = TrainingArguments(
        output_dir=tmp,
        max_steps=6,
        per_device_train_batch_size=8,
        learning_rate=1e-2,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_strategy="no",
    )
    Trainer(model=MaskedMeanClassifier(), args=args, train_dataset=ds).train()
