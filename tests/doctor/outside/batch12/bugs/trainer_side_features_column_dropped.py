"""Trains a small text+tabular model with the Hugging Face Trainer: a tiny BERT encoder (from a config)
reads a short review and an MLP reads four numeric seller features, and the two are fused to predict a
binary label that depends mostly on the numeric features. The model's forward takes the numeric
features through **kwargs. The Trainer removes every dataset column whose name is not a named forward
argument (remove_unused_columns=True by default, applied by a collator wrapper for torch datasets and
only reported at INFO level), so `num_feats` never reaches the model, which falls back to zeros and
trains on text alone from the first step. Training runs to completion without any warning.

Source: https://github.com/huggingface/transformers/pull/17166
"""

import tempfile

import torch
import torch.nn as nn
from transformers import BertConfig, BertModel, Trainer, TrainingArguments

torch.manual_seed(0)
V = 40


class ReviewSellerModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = BertModel(
            BertConfig(
                vocab_size=V,
                hidden_size=32,
                num_hidden_layers=1,
                num_attention_heads=2,
                intermediate_size=64,
                max_position_embeddings=16,
            )
        )
        self.num_mlp = nn.Sequential(nn.Linear(4, 32), nn.ReLU())
        self.head = nn.Linear(64, 2)

    def forward(self, input_ids, attention_mask=None, labels=None, **kwargs):  # BUG-LINE
        num_feats = kwargs.get("num_feats")
        if num_feats is None:  # allow text-only inference
            num_feats = torch.zeros(input_ids.shape[0], 4)
        h = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state[:, 0]
        logits = self.head(torch.cat([h, self.num_mlp(num_feats)], -1))
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return {"loss": loss, "logits": logits}


class DS(torch.utils.data.Dataset):
    def __init__(self, n):
        self.ids = torch.randint(1, V, (n, 10))
        self.feats = torch.randn(n, 4)
        score = 1.5 * self.feats[:, 0] - self.feats[:, 2] + 0.3 * (self.ids[:, 0] > V // 2).float()
        self.y = (score > 0).long()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {
            "input_ids": self.ids[i],
            "attention_mask": torch.ones(10, dtype=torch.long),
            "num_feats": self.feats[i],
            "labels": self.y[i],
        }


train_ds, test_ds = DS(512), DS(200)
model = ReviewSellerModel()
with tempfile.TemporaryDirectory() as out_dir:
    args = TrainingArguments(
        output_dir=out_dir,
        max_steps=40,
        per_device_train_batch_size=32,
        learning_rate=3e-3,
        logging_steps=10,
        report_to=[],
        save_strategy="no",
        seed=0,
        use_cpu=True,
        disable_tqdm=True,
    )
    Trainer(model=model, args=args, train_dataset=train_ds).train()

model.eval()
with torch.no_grad():
    out = model(input_ids=test_ds.ids, attention_mask=torch.ones_like(test_ds.ids), num_feats=test_ds.feats)
    print("test accuracy:", (out["logits"].argmax(-1) == test_ds.y).float().mean().item())
