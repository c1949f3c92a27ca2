"""Hugging Face Trainer with a custom compute_loss (a tiny GPT-2 built from a config): the hand-written
cross-entropy compares logits at position t with the token at t, the labels not shifted.

doctor-expect: labels_not_shifted
"""

import tempfile

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
config = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)


class Ids(torch.utils.data.Dataset):
    def __init__(self, n):
        self.data = torch.randint(0, 64, (n, 32))

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


class LMTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        logits = model(**inputs).logits  # (B, T, V)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))  # bug: not shifted
        return (loss, logits) if return_outputs else loss


with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(
        output_dir=out,
        per_device_train_batch_size=8,
        max_steps=6,
        learning_rate=1e-3,
        logging_steps=100,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
    )
    LMTrainer(model=GPT2LMHeadModel(config), args=args, train_dataset=Ids(64)).train()
