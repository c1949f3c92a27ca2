"""A binary sentiment classifier is configured with ``num_labels=1`` (one logit, as for a sigmoid). In
transformers ``num_labels == 1`` means regression: the model computes MSE between the raw logit and the 0/1
labels (cast to float), so the Trainer fits a regression instead of a classifier and nothing errors.

Source: https://github.com/huggingface/transformers/issues/7496
"""

import tempfile

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
from transformers.utils import logging

logging.set_verbosity_error()
torch.manual_seed(0)


class Toy(Dataset):
    def __init__(self, n=64):
        self.ids = torch.randint(5, 100, (n, 16))
        self.labels = (self.ids[:, :4] < 50).all(1).long()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(16, dtype=torch.long), "labels": self.labels[i]}


config = BertConfig(
    vocab_size=100,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=32,
)
config.num_labels = 1  # BUG-LINE
model = BertForSequenceClassification(config)
with tempfile.TemporaryDirectory() as tmp:
    args = TrainingArguments(
        output_dir=tmp,
        max_steps=6,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        use_cpu=True,
    )
    Trainer(model=model, args=args, train_dataset=Toy()).train()
