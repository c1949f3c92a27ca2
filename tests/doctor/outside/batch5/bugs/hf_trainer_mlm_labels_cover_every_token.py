"""A masked-LM collator masks 15% of the input tokens but returns ``labels = input_ids`` for every position
instead of -100 on unmasked tokens. The loss is then dominated by copying visible tokens through, the model is
rewarded for the identity mapping and the masked-token objective is diluted.

Source: https://github.com/huggingface/transformers/issues/20797
"""

import tempfile

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForMaskedLM, Trainer, TrainingArguments
from transformers.utils import logging

logging.set_verbosity_error()
torch.manual_seed(0)
MASK_ID = 4


class Texts(Dataset):
    def __init__(self, n=64):
        self.ids = torch.randint(5, 100, (n, 16))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i]}


def collate(examples):
    labels = torch.stack([e["input_ids"] for e in examples])
    inputs = labels.clone()
    masked = torch.bernoulli(torch.full(labels.shape, 0.15)).bool()
    inputs[masked] = MASK_ID
    return {"input_ids": inputs, "attention_mask": torch.ones_like(inputs), "labels": labels}  # BUG-LINE


config = BertConfig(
    vocab_size=100,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=32,
)
model = BertForMaskedLM(config)
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
        remove_unused_columns=False,
    )
    Trainer(model=model, args=args, train_dataset=Texts(), data_collator=collate).train()
