"""Clean: Hugging Face Trainer fine-tuning a tiny GPT-2 built from a config (no download) on made-up text ids."""

import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
config = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(config)


class Ids(torch.utils.data.Dataset):
    def __init__(self, n):
        self.data = torch.randint(0, 64, (n, 32))

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}  # the model shifts labels itself


with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(
        output_dir=out,
        per_device_train_batch_size=8,
        max_steps=6,
        learning_rate=1e-3,
        warmup_steps=2,
        logging_steps=100,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
    )
    Trainer(model=model, args=args, train_dataset=Ids(64)).train()
