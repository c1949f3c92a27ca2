"""A Trainer subclass overrides ``compute_loss`` to apply class weights for an imbalanced classification task:
labels are popped from the inputs, the model runs without them and a weighted cross-entropy on the logits is
returned. Replacing the model's built-in loss is the documented customisation point.

Source: https://huggingface.co/docs/transformers/main/en/trainer#customize-the-trainer
"""

import tempfile

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
from transformers.utils import logging

logging.set_verbosity_error()
torch.manual_seed(0)


class Toy(Dataset):
    def __init__(self, n=64):
        self.ids = torch.randint(5, 100, (n, 16))
        self.labels = (self.ids[:, 0] < 20).long() + (self.ids[:, 1] < 20).long()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(16, dtype=torch.long), "labels": self.labels[i]}


class WeightedTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        weight = torch.tensor([1.0, 2.0, 4.0])
        loss = F.cross_entropy(outputs.logits, labels, weight=weight)
        return (loss, outputs) if return_outputs else loss


config = BertConfig(
    vocab_size=100,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=32,
    num_labels=3,
)
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
    WeightedTrainer(model=model, args=args, train_dataset=Toy()).train()
