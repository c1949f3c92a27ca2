"""Target sequences are padded with the tokenizer's pad id and passed as labels.
The model's loss uses CrossEntropyLoss with the default ignore_index=-100, so pad
positions are not ignored: a large share of the training signal is spent on
predicting padding, and shorter examples are effectively down-weighted.

Source: https://github.com/huggingface/transformers/issues/11616
"""

import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
PAD = 0
cfg = GPT2Config(vocab_size=50, n_positions=32, n_embd=32, n_layer=2, n_head=2, pad_token_id=PAD)
model = GPT2LMHeadModel(cfg)


class ToyData(torch.utils.data.Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        return {"input_ids": [1 + (3 * i + k) % 45 for k in range(3 + i % 10)]}


def collate(examples):
    longest = max(len(e["input_ids"]) for e in examples)
    ids = torch.full((len(examples), longest), PAD)
    mask = torch.zeros_like(ids)
    for r, e in enumerate(examples):
        ids[r, : len(e["input_ids"])] = torch.tensor(e["input_ids"])
        mask[r, : len(e["input_ids"])] = 1
    labels = ids.clone()  # BUG-LINE
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


with tempfile.TemporaryDirectory() as tmp:
    args = TrainingArguments(
        output_dir=tmp,
        max_steps=6,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        report_to=[],
        use_cpu=True,
        logging_steps=100,
        save_strategy="no",
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=ToyData(), data_collator=collate)
    trainer.train()
print("done")
