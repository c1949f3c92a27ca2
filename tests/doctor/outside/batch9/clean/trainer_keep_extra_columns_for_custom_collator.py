"""HF Trainer with remove_unused_columns=False so a custom collator can read a non-model column.

Unusual: the dataset carries a "prompt_len" column the model's forward does not accept; the
Trainer keeps it, and the collator uses it to mask prompt tokens with -100 and then drops it.
Source: https://github.com/huggingface/transformers/pull/6683
"""

import tempfile

import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


def collate(features):
    max_len = max(len(f["input_ids"]) for f in features)
    ids, mask, labels = [], [], []
    for f in features:
        n = max_len - len(f["input_ids"])
        ids.append(f["input_ids"] + [0] * n)
        mask.append([1] * len(f["input_ids"]) + [0] * n)
        lab = [-100] * f["prompt_len"] + f["input_ids"][f["prompt_len"] :] + [-100] * n
        labels.append(lab)
    return {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(mask), "labels": torch.tensor(labels)}


rows = [{"input_ids": [1 + (i + j) % 30 for j in range(6 + i % 5)], "prompt_len": 3} for i in range(48)]
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=32, n_positions=32))
with tempfile.TemporaryDirectory() as d:
    args = TrainingArguments(
        output_dir=d,
        max_steps=6,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        report_to=[],
        use_cpu=True,
        remove_unused_columns=False,
        save_strategy="no",
    )
    trainer = Trainer(model=model, args=args, train_dataset=Dataset.from_list(rows), data_collator=collate)
    result = trainer.train()
print(f"train loss {result.training_loss:.4f}")
