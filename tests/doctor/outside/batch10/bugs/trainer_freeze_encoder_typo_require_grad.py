"""Fine-tunes a tiny BERT sequence classifier (built from a config) with the Hugging Face Trainer,
intending to train only the classification head on top of a frozen encoder (linear probing). The
freezing loop writes `param.require_grad = False` (missing "s"). Python happily creates a new,
meaningless attribute on each Parameter, requires_grad stays True, and the Trainer's optimizer
updates the whole encoder at the head's learning rate. Training runs normally and the loss goes
down; the only symptom is that the "frozen" encoder weights change.

Source: https://github.com/udacity/deep-learning-v2-pytorch/issues/12
"""

import tempfile

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

torch.manual_seed(0)
V, T = 30, 12
cfg = BertConfig(
    vocab_size=V,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_position_embeddings=T,
    num_labels=2,
)
model = BertForSequenceClassification(cfg)
for param in model.bert.parameters():
    param.require_grad = False  # BUG-LINE


class ToyText(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(1)
        self.ids = torch.randint(1, V, (n, T), generator=g)
        self.labels = (self.ids[:, 1] > V // 2).long()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


enc_before = model.bert.encoder.layer[0].attention.self.query.weight.detach().clone()
with tempfile.TemporaryDirectory() as out_dir:
    args = TrainingArguments(
        output_dir=out_dir,
        max_steps=10,
        per_device_train_batch_size=16,
        learning_rate=5e-3,
        report_to=[],
        logging_steps=2,
        save_strategy="no",
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=ToyText(256))
    result = trainer.train()
n_trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
change = (model.bert.encoder.layer[0].attention.self.query.weight - enc_before).abs().max().item()
print(f"train loss {result.training_loss:.4f} trainable params {n_trainable} encoder change {change:.2e}")
