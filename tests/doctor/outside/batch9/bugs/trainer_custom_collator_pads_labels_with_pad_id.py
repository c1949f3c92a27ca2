"""A custom collator used with HF Trainer pads labels with pad_token_id instead of -100.

Labels are copied from the padded input_ids, so padding positions carry a real token id and
count in the cross-entropy. Short samples contribute mostly "predict <pad>" targets, which
dominate the loss and gradients from the first step.
Source: https://github.com/wangshy31/OneRec-Think/issues/8
"""

import tempfile

import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

PAD = 0


class PadCollator:
    def __call__(self, features):
        max_len = max(len(f["input_ids"]) for f in features)
        ids, mask, labels = [], [], []
        for f in features:
            n = max_len - len(f["input_ids"])
            padded = f["input_ids"] + [PAD] * n
            ids.append(padded)
            mask.append([1] * len(f["input_ids"]) + [0] * n)
            labels.append(list(padded))  # BUG-LINE
        return {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(mask), "labels": torch.tensor(labels)}


rows = [{"input_ids": [1 + (i + j) % 40 for j in range(3 + i % 12)]} for i in range(48)]
ds = Dataset.from_list(rows)
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=48, n_positions=32))
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
    trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=PadCollator())
    result = trainer.train()
print(f"train loss {result.training_loss:.4f}")
